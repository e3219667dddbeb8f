import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { normalizePath } from '../../src/rules/normalize-path.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { scrapeMetrics } from '../helpers/scrape-metrics.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { prng } from '../helpers/prng.ts';
import { fuzzCase, MAX_BODY } from './fuzz-cases.ts';
import { exchange, HEADERS_TIMEOUT_MS, slowLoris, type Outcome } from './fuzz-client.ts';

/**
 * 10,000+ malformed requests over raw sockets into the real edge (in-process,
 * memory store) in front of a healthy counting upstream, while a few
 * slow-loris sockets trickle headers. Nothing may answer 5xx (the upstream is
 * healthy, so not even 502/503/504), nothing may crash, a valid request still
 * gets 200 afterwards, and the upstream never sees a request the edge should
 * have refused. Replay a run with FUZZ_SEED=<seed> (printed at the start).
 */

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = 32;
/** How often Node enforces the production listener's headersTimeout (HEADERS_TIMEOUT_MS). */
const SWEEP_MS = 1_000;
const LORIS_SOCKETS = 3;

const RULES = `
- id: keyed
  match: { prefix: /keyed }
  limits:
    - { by: api-key, count: 1000000, per: 1s, category: Keyed }
    - { by: user-ip, count: 1000000, per: 1s, category: Keyed }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;

interface UpstreamRecord {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: readonly string[];
  bytes: number;
  done: boolean;
}

let upstream: TestUpstream;
const records: UpstreamRecord[] = [];
let rules: ReturnType<typeof rulesDir>;
let gw: TestGateway;

beforeAll(async () => {
  rules = rulesDir(RULES);
  upstream = await startUpstream((req, res) => {
    const rec: UpstreamRecord = {
      method: req.method ?? '',
      url: req.url ?? '',
      rawHeaders: req.rawHeaders,
      bytes: 0,
      done: false,
    };
    records.push(rec);
    req.on('data', (c: Buffer) => (rec.bytes += c.length));
    req.once('close', () => (rec.done = true));
    req.once('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  gw = await startTestGateway({
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
    MAX_BODY: String(MAX_BODY),
    LOG_LEVEL: 'warn', // 10,000 request lines would only slow the run; warnings and errors are kept and checked
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rules?.remove();
});

describe('fuzz: malformed requests through the edge', () => {
  it(
    `${REQUESTS} malformed requests and ${LORIS_SOCKETS} slow-loris sockets: no 5xx, no crash, nothing refused reaches the upstream`,
    { timeout: 120_000 },
    async () => {
      console.log(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED})`);
      const rng = prng(SEED);
      const cases = Array.from({ length: REQUESTS }, () => fuzzCase(rng));
      const outcomes: Outcome[] = new Array<Outcome>(cases.length);

      // The HTTP adapter reports what it could not handle (a response written twice, say) on the console.
      const consoleErrors = vi.spyOn(console, 'error');
      const loris = Array.from({ length: LORIS_SOCKETS }, () => slowLoris(gw.port));
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < cases.length) {
            const i = next++;
            outcomes[i] = await exchange(gw.port, cases[i]!);
          }
        }),
      );
      const fuzzMs = performance.now() - started;
      const lorisResults = await Promise.all(loris);
      const adapterErrors = consoleErrors.mock.calls.map((args) => String(args[0]).slice(0, 200));
      consoleErrors.mockRestore();

      // What happened, by kind (printed: a changed distribution is worth a look even when nothing fails).
      const table = new Map<string, Map<number, number>>();
      const slowest = new Map<string, number>();
      cases.forEach((c, i) => {
        const row = table.get(c.kind) ?? new Map<number, number>();
        row.set(outcomes[i]!.status, (row.get(outcomes[i]!.status) ?? 0) + 1);
        table.set(c.kind, row);
        slowest.set(c.kind, Math.max(slowest.get(c.kind) ?? 0, outcomes[i]!.ms));
      });
      console.log(
        `fuzz: ${cases.length} requests in ${(fuzzMs / 1000).toFixed(1)} s, ${records.length} reached the upstream, ${outcomes.filter((o) => o.reset).length} reset by the edge\n` +
          [...table]
            .map(
              ([kind, row]) =>
                `  ${kind.padEnd(26)} ${`max ${Math.round(slowest.get(kind)!)} ms`.padEnd(14)} ${[...row].map(([s, n]) => `${s || 'closed'}×${n}`).join(' ')}`,
            )
            .join('\n'),
      );
      const replay = `(FUZZ_SEED=${SEED})`;
      const show = (i: number) =>
        `#${i} ${cases[i]!.kind}: ${JSON.stringify(
          Buffer.concat(cases[i]!.parts.map((p) => Buffer.from(p as string, 'latin1')))
            .toString('latin1')
            .slice(0, 300),
        )} → ${JSON.stringify(outcomes[i])}`;

      // No 5xx at all, and no request left hanging.
      const failures = outcomes.flatMap((o, i) => (o.status >= 500 || o.error !== undefined ? [show(i)] : []));
      expect(failures.slice(0, 10), `5xx or hung requests ${replay}`).toEqual([]);
      // Where the design fixes the answer, it is that answer.
      const unexpected = outcomes.flatMap((o, i) =>
        cases[i]!.want && !cases[i]!.want.includes(o.status) ? [show(i)] : [],
      );
      expect(unexpected.slice(0, 10), `unexpected statuses ${replay}`).toEqual([]);

      // Every refusal is the gateway's JSON error, never an empty or HTML answer.
      const notJson = outcomes.flatMap((o, i) => {
        if (o.status < 400 || o.reset) return []; // a reset may have cut the body short: nothing to judge
        try {
          const parsed = JSON.parse(o.body ?? '') as { detail?: unknown; code?: unknown };
          if (typeof parsed.detail === 'string' && (typeof parsed.code === 'string' || o.status === 429)) return [];
        } catch {
          // reported below
        }
        return [show(i)];
      });
      expect(notJson.slice(0, 10), `non-JSON error answers ${replay}`).toEqual([]);
      // Every HEAD request made @hono/node-server write its response a second time (ERR_HTTP_HEADERS_SENT, a stack
      // trace on stderr each).
      expect(
        adapterErrors.slice(0, 5),
        `regression: @hono/node-server wrote every HEAD response twice ${replay}`,
      ).toEqual([]);

      // The edge's own account agrees: no 5xx counted, no error logged.
      const metrics = await scrapeMetrics(gw.gateway.admin.port);
      expect(metrics.match(/^gateway_requests_total\{[^}]*status="5\d\d"[^}]*\} .*$/gm) ?? [], replay).toEqual([]);
      const errors = gw.logs.lines().filter((l) => (l.level as number) >= 50);
      expect(errors.slice(0, 5), replay).toEqual([]);

      // Slow-loris: each socket is cut by headersTimeout (408), not held open, while everyone else was served.
      const lorisProblems = lorisResults.filter(
        (l) =>
          !/^HTTP\/1\.1 408 /.test(l.response) ||
          !l.response.includes('"code":"request_timeout"') ||
          l.closedAfterMs < HEADERS_TIMEOUT_MS - 500 ||
          l.closedAfterMs > HEADERS_TIMEOUT_MS + SWEEP_MS + 3000,
      );
      expect(lorisProblems, `slow-loris sockets not cut by headersTimeout ${replay}`).toEqual([]);

      // Still alive and serving.
      const valid = await request(`${gw.url}/keyed/after-fuzz`, { headers: { 'x-api-key': 'after-fuzz' } });
      expect(valid.statusCode, replay).toBe(200);
      expect(await valid.body.json()).toEqual({ ok: true });
      expect((await request(`http://127.0.0.1:${gw.gateway.admin.port}/healthz`)).statusCode).toBe(200);

      // The upstream saw only what the edge should let through. Wait for bodies still in flight first.
      const deadline = Date.now() + 3000;
      while (records.some((r) => !r.done) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const forwarded = outcomes.filter((o) => o.status === 200).length;
      expect(records.length, replay).toBeGreaterThanOrEqual(forwarded); // every 200 came from the upstream
      expect(records.length).toBeGreaterThan(REQUESTS * 0.1); // the fuzz did exercise forwarding
      const refusedAtUpstream = records.flatMap((r) => {
        const problems: string[] = [];
        const path = r.url.split('?')[0]!;
        let normal: string | null;
        try {
          normal = normalizePath(path);
        } catch {
          normal = null;
        }
        if (!path.startsWith('/') || normal !== path) problems.push(`path not in normal form: ${path.slice(0, 120)}`);
        for (const name of ['x-api-key', 'x-user-id']) {
          const n = r.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === name).length;
          if (n > 1) problems.push(`${n}× ${name}`);
        }
        if (r.bytes > MAX_BODY) problems.push(`body of ${r.bytes} bytes > MAX_BODY ${MAX_BODY}`);
        if (r.url.includes('slow-loris')) problems.push('a slow-loris request');
        return problems.length > 0 ? [`${r.method} ${r.url.slice(0, 120)}: ${problems.join('; ')}`] : [];
      });
      expect(refusedAtUpstream.slice(0, 10), replay).toEqual([]);
    },
  );
});

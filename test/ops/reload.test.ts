import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { metricValue, scrapeMetrics } from '../helpers/scrape-metrics.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Hot rule reload: on a change of the rule file (in-process gateway, its
 * folder watched) and on SIGHUP (the real process). New rules apply without a
 * restart; an invalid file is rejected with a log line naming file, line and
 * reason while the old rules keep serving; buckets of rules that did not
 * change keep their state; the metrics say which file is in force.
 */

/** `probe` is the rule each test changes; `steady` never changes (its bucket must survive reloads). */
const rules = (probeCount: number, extra = '') => `
- id: probe
  match: { prefix: /probe }
  limits:
    - { by: api-key, count: ${probeCount}, per: 60s, category: Probe }
- id: steady
  match: { prefix: /steady }
  limits:
    - { by: api-key, count: 10, per: 3600s, category: Steady }
${extra}- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;
const V1 = rules(100);
const V2 = rules(5);
/** Line 5 is `per: 10 parsecs`. */
const INVALID = `
- id: probe
  match: { prefix: /probe }
  limits:
    - { by: api-key, count: 5, per: 10 parsecs, category: Probe }
`;
const INVALID_LINE = 5;

/**
 * Replaces `file` in one step (write beside it, rename over it), as config tools do: a reader sees the old or the new
 * text, never a partial one.
 */
function replaceFile(file: string, text: string): void {
  writeFileSync(`${file}.next`, text);
  renameSync(`${file}.next`, file);
}

const versionOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

/** The `q` of the probe rule's RateLimit-Policy, i.e. which rule file is serving. */
async function probeQuota(url: string): Promise<number> {
  const res = await request(`${url}/probe`, { headers: { 'x-api-key': 'probe-key' } });
  await res.body.dump();
  const policy = String(res.headers['ratelimit-policy'] ?? '');
  const q = /"probe\.api-key";q=(\d+)/.exec(policy)?.[1];
  if (q === undefined) throw new Error(`no probe policy in ${JSON.stringify(res.headers)}`);
  return Number(q);
}

/** The `r` (tokens left) of the steady rule's bucket for `key`, after taking one. */
async function steadyRemaining(url: string, key: string): Promise<number> {
  const res = await request(`${url}/steady`, { headers: { 'x-api-key': key } });
  await res.body.dump();
  expect(res.statusCode).toBe(200);
  const r = /"steady\.api-key";r=(\d+)/.exec(String(res.headers.ratelimit ?? ''))?.[1];
  if (r === undefined) throw new Error(`no steady RateLimit in ${JSON.stringify(res.headers)}`);
  return Number(r);
}

/** Polls `probe` until it says `want`, up to `timeoutMs`; returns how long it took. */
async function until(probe: () => Promise<number>, want: number, timeoutMs = 5000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const got = await probe();
    if (got === want) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`still ${got}, not ${want}, after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function rulesVersionLabel(metrics: string): string | undefined {
  const found = [...metrics.matchAll(/^gateway_rules_info\{([^}]*)\} 1$/gm)].map(
    (m) => /version="([^"]*)"/.exec(m[1]!)?.[1],
  );
  if (found.length !== 1) throw new Error(`expected one gateway_rules_info series, got ${found.length}:\n${metrics}`);
  return found[0];
}

describe('reload on a change of the rule file (in-process gateway)', () => {
  let gw: TestGateway | undefined;
  let dir: ReturnType<typeof rulesDir> | undefined;
  afterEach(async () => {
    await gw?.close();
    dir?.remove();
    gw = dir = undefined;
  });

  async function start(): Promise<{ gw: TestGateway; file: string; admin: number }> {
    dir = rulesDir(V1);
    gw = await startTestGateway({
      RULES_DIR: dir.dir,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
    });
    return { gw, file: join(dir.dir, 'us.yaml'), admin: gw.gateway.admin.port };
  }

  it('new rules apply once the file changes, and gateway_rules_info carries the new version', async () => {
    const { gw, file, admin } = await start();
    expect(await probeQuota(gw.url)).toBe(100);
    const before = await scrapeMetrics(admin);
    expect(rulesVersionLabel(before)).toBe(versionOf(V1));

    replaceFile(file, V2);
    await until(() => probeQuota(gw.url), 5);

    // The watcher reloaded, then the gateway reloaded again to report, which could only say "unchanged": the new rules
    // served while metrics and logs still named the old file.
    const regression = 'regression: after a reload, metrics and logs still named the old rules';
    const after = await scrapeMetrics(admin);
    expect(rulesVersionLabel(after), regression).toBe(versionOf(V2));
    expect(metricValue(after, 'gateway_rules_reloads_total', { result: 'ok' }), regression).toBe(
      metricValue(before, 'gateway_rules_reloads_total', { result: 'ok' }) + 1,
    );
    expect(await gw.logs.waitFor((l) => l.msg === 'rules reloaded'), regression).toMatchObject({
      file,
      version: versionOf(V2),
    });
    const ready = await request(`http://127.0.0.1:${admin}/readyz`);
    expect(await ready.body.json(), regression).toMatchObject({ rules: versionOf(V2) });
  });

  it('an invalid file is rejected with file, line and reason logged; the old rules keep serving; reloads{result="invalid"} counts it', async () => {
    const { gw, file, admin } = await start();
    const before = await scrapeMetrics(admin);

    writeFileSync(file, INVALID); // in place, as an editor saves
    const rejected = await gw.logs.waitFor((l) => l.msg === 'rule reload rejected: the old rules keep serving', 5000);
    expect(rejected.level).toBe(50); // error
    expect(rejected.file).toBe(file);
    expect(String(rejected.reason)).toContain(`${file}:${INVALID_LINE}: `);
    expect(String(rejected.reason)).toMatch(/per: bad duration/);

    expect(await probeQuota(gw.url)).toBe(100); // still V1
    const after = await scrapeMetrics(admin);
    expect(metricValue(after, 'gateway_rules_reloads_total', { result: 'invalid' })).toBeGreaterThanOrEqual(
      metricValue(before, 'gateway_rules_reloads_total', { result: 'invalid' }) + 1,
    );
    expect(metricValue(after, 'gateway_rules_reloads_total', { result: 'ok' })).toBe(
      metricValue(before, 'gateway_rules_reloads_total', { result: 'ok' }),
    );
    expect(rulesVersionLabel(after)).toBe(versionOf(V1));
    const ready = await request(`http://127.0.0.1:${admin}/readyz`);
    expect(ready.statusCode).toBe(200);
    expect(await ready.body.json()).toMatchObject({ rules: versionOf(V1) });

    // Fixed again: the next change is taken.
    writeFileSync(file, V2);
    await until(() => probeQuota(gw.url), 5);
  });

  it('buckets of unchanged rules keep their state across a reload: RateLimit r continues where it was', async () => {
    const { gw, file } = await start();
    const key = 'steady-key';
    const seen: number[] = [];
    for (let i = 0; i < 7; i++) seen.push(await steadyRemaining(gw.url, key));
    expect(seen).toEqual([9, 8, 7, 6, 5, 4, 3]);

    writeFileSync(file, V2); // `probe` changes, `steady` does not
    await until(() => probeQuota(gw.url), 5);

    // A bucket rebuilt by the reload would say r=9 again.
    expect(await steadyRemaining(gw.url, key)).toBe(2);
    expect(await steadyRemaining(gw.url, key)).toBe(1);
  });
});

describe('reload on SIGHUP (gateway process)', () => {
  let gw: GatewayProcess | undefined;
  let tmp: string | undefined;
  afterEach(async () => {
    await gw?.kill();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    gw = tmp = undefined;
  });

  /**
   * RULES_DIR/us.yaml is a symlink to a file in another folder: the gateway
   * watches RULES_DIR, which does not see writes to the link's target, so
   * only SIGHUP can make it reload. That keeps the watcher out of this test.
   */
  async function start(): Promise<{ gw: GatewayProcess; target: string }> {
    tmp = mkdtempSync(join(tmpdir(), 'edge-reload-'));
    const target = join(tmp, 'source.yaml');
    writeFileSync(target, V1);
    const watched = join(tmp, 'rules');
    mkdirSync(watched);
    symlinkSync(target, join(watched, 'us.yaml'));
    gw = await startGatewayProcess({
      RULES_DIR: watched,
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
    });
    return { gw, target };
  }

  it('SIGHUP applies the new file; an invalid one is rejected, logged with file and line, and the old rules keep serving', async () => {
    const { gw, target } = await start();
    expect(await probeQuota(gw.url)).toBe(100);
    for (let i = 0; i < 7; i++) await steadyRemaining(gw.url, 'hup-key');
    const before = await scrapeMetrics(gw.adminPort);
    expect(rulesVersionLabel(before)).toBe(versionOf(V1));

    // Invalid file, SIGHUP: rejected, logged, counted; V1 serves on.
    writeFileSync(target, INVALID);
    await new Promise((r) => setTimeout(r, 300)); // past the watcher's debounce: nothing may happen without the signal
    expect(gw.lines().some((l) => String(l.msg).startsWith('rule'))).toBe(false);
    gw.signal('SIGHUP');
    const rejected = await gw.waitForLine((l) => l.msg === 'rule reload rejected: the old rules keep serving');
    expect(String(rejected.reason)).toContain(`:${INVALID_LINE}: `);
    expect(String(rejected.reason)).toMatch(/per: bad duration/);
    expect(String(rejected.file)).toMatch(/us\.yaml$/);
    expect(await probeQuota(gw.url)).toBe(100);
    const afterInvalid = await scrapeMetrics(gw.adminPort);
    expect(metricValue(afterInvalid, 'gateway_rules_reloads_total', { result: 'invalid' })).toBe(1);
    expect(rulesVersionLabel(afterInvalid)).toBe(versionOf(V1));

    // Valid file: not applied until the signal, then applied.
    writeFileSync(target, V2);
    await new Promise((r) => setTimeout(r, 300));
    expect(await probeQuota(gw.url)).toBe(100);
    gw.signal('SIGHUP');
    await until(() => probeQuota(gw.url), 5);
    const after = await scrapeMetrics(gw.adminPort);
    expect(rulesVersionLabel(after)).toBe(versionOf(V2));
    expect(metricValue(after, 'gateway_rules_reloads_total', { result: 'ok' })).toBe(1);
    // The unchanged rule's bucket went through both reloads untouched (7 taken before, this is the 8th).
    expect(await steadyRemaining(gw.url, 'hup-key')).toBe(2);

    // SIGHUP with nothing changed: counted as unchanged, the process keeps serving.
    gw.signal('SIGHUP');
    await until(
      async () =>
        metricValue(await scrapeMetrics(gw.adminPort), 'gateway_rules_reloads_total', { result: 'unchanged' }),
      1,
    );
    expect(await probeQuota(gw.url)).toBe(5);
  });
});

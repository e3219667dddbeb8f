import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoKey, MEMO_INLINE_MAX } from '../../src/memo/memo-key.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { spawnUpstream, type UpstreamProcess } from '../helpers/upstream-process.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { flood } from './flood.ts';

/**
 * Finding "unbounded identity caches": the KEY_CHECK answers and the bucket-key digests were remembered under the raw
 * header value, so 100,000 unique 16 KB `x-api-key`s (or `x-user-id`s) held 1.6 GB per memo, no credentials needed.
 * Now an identity header over MAX_IDENTITY_LENGTH (256 bytes) answers 400 `identity_header_too_long`, counted as a
 * request without identity headers (by client IP), and never reaches a memo; the memos themselves hold at most 128
 * characters per entry (`memoKey`) whatever MAX_IDENTITY_LENGTH says.
 */
const long = (n: number, tag: string) => `${tag}-`.padEnd(n, 'x');

describe('an over-long identity header', () => {
  let upstream: TestUpstream;
  let gw: TestGateway;
  let nextIp = 1;
  /** A client IP of its own per test (TRUST_PROXY is the loopback): buckets are not shared between tests. */
  const clientIp = () => `198.51.100.${nextIp++}`;
  const send = async (headers: Record<string, string>, path = '/runs/query') => {
    const res = await request(`${gw.url}${path}`, { method: 'POST', headers });
    return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startTestGateway({
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      TRUST_PROXY: '127.0.0.1/32',
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('answers 400 identity_header_too_long for x-api-key and x-user-id over 256 bytes, and reaches no upstream', async () => {
    const ip = clientIp();
    for (const name of ['x-api-key', 'x-user-id']) {
      const r = await send({ [name]: long(257, name), 'x-forwarded-for': ip });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        detail: `${name} header longer than 256 bytes (MAX_IDENTITY_LENGTH)`,
        code: 'identity_header_too_long',
      });
      // Counted as a request without identity headers: in the shipped table, the `public` rule, by client IP.
      expect(r.headers['ratelimit-policy']).toBe('"public.ip";q=100;w=60, "guard.per-ip";q=20000;w=10');
    }
    expect(upstream.seen).toHaveLength(0);
    // 256 bytes is within the limit: counted as itself.
    const ok = await send({ 'x-api-key': long(256, 'edge'), 'x-forwarded-for': ip });
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit-policy']).toContain('"runs-query.api-key"');
  });

  it('is counted by client IP: rotating over-long keys buys no fresh bucket', async () => {
    const ip = clientIp();
    const statuses: number[] = [];
    // The bucket refills one token per 0.6 s: a few more than 100 may pass on a slow machine, never many.
    while (statuses.at(-1) !== 429 && statuses.length < 120)
      statuses.push(
        (await send({ 'x-api-key': long(300, `rotating-${statuses.length}`), 'x-forwarded-for': ip })).status,
      );
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.length).toBeGreaterThan(100);
    expect(statuses.slice(0, -1).every((s) => s === 400)).toBe(true);
    // ... and it is the bucket an anonymous request from that IP uses (empty, or one token refilled since).
    const anonymous = await send({ 'x-forwarded-for': ip }, '/anything');
    expect(anonymous.headers['ratelimit']).toMatch(/^"public.ip";r=0;/);
  });

  it('MAX_IDENTITY_LENGTH is a setting (16-8192), invalid values fail naming it', () => {
    expect(loadSettings({}).maxIdentityLength).toBe(256);
    expect(loadSettings({ MAX_IDENTITY_LENGTH: '1024' }).maxIdentityLength).toBe(1024);
    for (const bad of ['8', '9000', 'big'])
      expect(() => loadSettings({ MAX_IDENTITY_LENGTH: bad })).toThrow(/^MAX_IDENTITY_LENGTH: must be a whole number/);
  });

  it('memo keys are bounded: short identities are themselves, long ones a fixed-size digest', () => {
    expect(memoKey('gwk_abc')).toBe('gwk_abc');
    const a = memoKey(long(16_000, 'a'));
    expect(a).toHaveLength(45);
    expect(a).not.toBe(memoKey(long(16_000, 'b')));
    expect(memoKey('k'.repeat(MEMO_INLINE_MAX))).toHaveLength(MEMO_INLINE_MAX);
  });
});

const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FLOOD = 200_000;
const RSS_GROWTH_BOUND_MB = 150;
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
/** Resident memory of a running process, in MB (0 once it has exited). */
const rssMb = (pid: number) => {
  try {
    return procRssMb(pid);
  } catch {
    return 0; // exited
  }
};
const procRssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/**
 * The gateway as it runs (`node bin/gateway.js start`, its own process, so only its memory is measured), KEY_CHECK on
 * (both memos in play), flooded with 200,000 unique ~16 KB identities, half `x-api-key`, half `x-user-id`.
 */
describe.skipIf(process.platform !== 'linux')('a flood of unique 16 KB identities', () => {
  let upstream: UpstreamProcess;
  let child: ChildProcess;
  let port: number;
  let stderr = '';

  beforeAll(async () => {
    upstream = await spawnUpstream('flood-upstream');
    port = await freePort();
    const adminPort = await freePort();
    child = spawn(process.execPath, [BIN, 'start'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        ADMIN_PORT: String(adminPort),
        LOG_LEVEL: 'warn', // 200,000 request lines would only slow the flood down
        KEY_CHECK: 'on', // the bundled control plane's registry (in memory)
        AGENT_SERVER_URL: upstream.url,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    for (const deadline = Date.now() + 30_000; ;) {
      const ready = await request(`http://127.0.0.1:${adminPort}/readyz`).then(
        (r) => (r.body.dump(), r.statusCode === 200),
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`gateway did not start:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 40_000);
  afterAll(async () => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    await upstream?.kill();
  });

  it(`keeps the gateway's RSS growth under ${RSS_GROWTH_BOUND_MB} MB`, { timeout: 120_000 }, async () => {
    const filler = 'f'.repeat(16_000);
    const head = (n: number) =>
      `GET /flood HTTP/1.1\r\nhost: edge\r\n${n % 2 === 0 ? 'x-api-key' : 'x-user-id'}: ${n}-${filler}\r\n\r\n`;
    const run = (total: number, offset: number, stop?: () => boolean) =>
      flood({
        port,
        total,
        connections: 4,
        depth: 32,
        request: (n) => head(n + offset),
        deadline: Date.now() + (total > 10_000 ? 45_000 : 20_000),
        stop,
      });

    await run(2_000, 10_000_000); // warm-up: JIT, buffers, connections
    const baseline = rssMb(child.pid!);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid!))), 100);
    const progress = setInterval(
      () => console.log(`flood: ${Date.now()}, RSS ${rssMb(child.pid!).toFixed(0)} MB`),
      10_000,
    );
    // Stops early once over the bound: the unfixed gateway would grow towards gigabytes.
    const result = await run(FLOOD, 0, () => peak - baseline > RSS_GROWTH_BOUND_MB).finally(
      () => (clearInterval(sampler), clearInterval(progress)),
    );
    peak = Math.max(peak, rssMb(child.pid!));
    console.log(
      `flood: ${result.answered} answered in ${result.ms} ms, statuses ${JSON.stringify(result.statuses)}, ` +
        `RSS ${baseline.toFixed(0)} MB -> peak ${peak.toFixed(0)} MB`,
    );
    expect(peak - baseline).toBeLessThan(RSS_GROWTH_BOUND_MB);
    // Aims at 200,000 within 45 s; a loaded machine may stop at the deadline. 20,000 unique 16 KB identities already
    // grew the unfixed gateway by over 300 MB (two memos holding every value).
    expect(result.answered).toBeGreaterThanOrEqual(20_000);
    // Refused (400) or, once the client IP's public bucket is empty, denied (429): nothing else.
    expect(Object.keys(result.statuses).sort()).toEqual(['400', '429']);
    expect(child.exitCode, stderr).toBeNull();
  });
});

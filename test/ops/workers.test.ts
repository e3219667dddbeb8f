import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { usableCpus } from '../../src/workers/cpu-count.ts';
import { within } from '../helpers/async.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { metricValue, scrapeMetrics, waitForMetric } from '../helpers/scrape-metrics.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { echoJson, startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';

/**
 * WORKERS=2, the real program (`gateway start`): a node:cluster primary with two edge workers on one public port and
 * the shared Redis (a prefix of its own per test). Both workers serve; one bucket is shared across them (a 10-request
 * limit admits exactly 10 through both); /metrics is one aggregate; SIGHUP reaches both; a worker killed with
 * SIGKILL is replaced and serves; SIGTERM drains both and exits 0; the bundled services run once, in the primary;
 * WORKERS=2 without REDIS_URL does not start.
 */

const LIMIT = 10;
const rules = (limit: number) => `
- id: limited
  match: { prefix: /limited }
  limits:
    - { by: api-key, count: ${limit}, per: 3600s, category: Limited }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;
const SLOW_MS = 1000;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

let upstream: TestUpstream;
let redis: Redis;
let tmp: string;
let rulesFile: string;
let gateway: SpawnedGateway | undefined;
const prefixes: string[] = [];

beforeAll(async () => {
  upstream = await startUpstream((req, res) => {
    if (req.url !== '/slow') return echoJson(req, res);
    req.resume();
    const timer = setTimeout(() => res.end('slow done'), SLOW_MS);
    res.once('close', () => clearTimeout(timer));
  });
  redis = sharedRedis();
  // RULES_DIR/us.yaml links to a file in another folder: the workers' watchers (on RULES_DIR) do not see writes to it,
  // so only SIGHUP reloads it.
  tmp = mkdtempSync(join(tmpdir(), 'edge-workers-'));
  rulesFile = join(tmp, 'source.yaml');
  writeFileSync(rulesFile, rules(LIMIT));
  mkdirSync(join(tmp, 'rules'));
  symlinkSync(rulesFile, join(tmp, 'rules', 'us.yaml'));
});

afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
  writeFileSync(rulesFile, rules(LIMIT));
});

afterAll(async () => {
  for (const prefix of prefixes) await deleteByPrefix(redis, prefix);
  redis?.disconnect();
  await upstream?.close();
  rmSync(tmp, { recursive: true, force: true });
});

function uniquePrefix(name: string): string {
  const prefix = `t-wk-${name}-${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  return prefix;
}

async function startWorkers(env: Record<string, string> = {}): Promise<SpawnedGateway> {
  gateway = await spawnGateway(
    {
      WORKERS: '2',
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: uniquePrefix('edge'),
      IDENTITY_SECRET: 'workers-test-identity-secret',
      LOG_LEVEL: 'info',
      RULES_DIR: join(tmp, 'rules'),
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      // A store error must show as a 503, never as a per-process fallback that would over-admit; a busy machine
      // must not turn a slow Redis answer into one.
      FAIL_MODE: 'closed',
      STORE_TIMEOUT_MS: '2000',
      DRAIN_SECONDS: '5',
      ...env,
    },
    60_000,
  );
  return gateway;
}

/** GET on a connection of its own (closed after): the cluster hands each new connection to the next worker. */
function getOnce(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${url}: no answer in 10 s`)));
  });
}

/** The edge workers serving now, by slot: their `edge worker serving` lines, the latest per slot. */
function workerPids(gw: SpawnedGateway): Map<number, number> {
  const pids = new Map<number, number>();
  for (const l of gw.lines()) if (l.msg === 'edge worker serving') pids.set(l.worker as number, l.pid as number);
  return pids;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends requests on fresh connections until worker `slot` has answered one (the cluster takes turns). */
async function untilWorkerServes(gw: SpawnedGateway, slot: number): Promise<number> {
  return waitForMetric(gw.adminPort, 'gateway_worker_requests_total', { worker: String(slot) }, (v) => v > 0, {
    timeoutMs: 15_000,
    everyMs: 100,
    between: () => Promise.all([1, 2, 3, 4].map(() => getOnce(`${gw.url}/open`))),
  });
}

describe('WORKERS=2 (gateway process, shared Redis)', () => {
  it('both workers serve on one port; a 10-request bucket admits exactly 10 through both; /metrics adds them up', async () => {
    const gw = await startWorkers();
    const pids = workerPids(gw);
    expect([...pids.keys()].sort()).toEqual([1, 2]);
    expect(new Set([gw.pid, ...pids.values()]).size).toBe(3);
    const listening = await gw.waitForLine((l) => l.msg === 'gateway listening');
    expect(listening).toMatchObject({ workers: 2, store: 'redis' });
    // Every worker's line is in the log before the gateway says it listens (what the other tests read at start).
    const order = gw.lines().map((l) => l.msg);
    expect(order.lastIndexOf('edge worker serving')).toBeLessThan(order.indexOf('gateway listening'));

    const ready = await request(`${gw.adminUrl}/readyz`);
    expect(ready.statusCode).toBe(200);
    expect(await ready.body.json()).toMatchObject({ status: 'ready', workers: { expected: 2, ready: 2 } });

    // 3 × the limit on one key, concurrently, each request on its own connection.
    const answers = await within(
      Promise.all(
        Array.from({ length: 3 * LIMIT }, () => getOnce(`${gw.url}/limited/x`, { 'x-api-key': 'one-shared-key' })),
      ),
      30_000,
      'the burst',
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2 * LIMIT);

    const text = await scrapeMetrics(gw.adminPort);
    const byWorker = [1, 2].map((w) => metricValue(text, 'gateway_worker_requests_total', { worker: String(w) }));
    // Both took part in the burst, and the aggregate counts every request once.
    expect(byWorker[0]).toBeGreaterThan(0);
    expect(byWorker[1]).toBeGreaterThan(0);
    expect(byWorker[0]! + byWorker[1]!).toBe(3 * LIMIT);
    expect(metricValue(text, 'gateway_requests_total', { rule: 'limited', decision: 'allowed' })).toBe(LIMIT);
    expect(metricValue(text, 'gateway_requests_total', { rule: 'limited', decision: 'denied' })).toBe(2 * LIMIT);
    expect(metricValue(text, 'gateway_workers', { state: 'serving' })).toBe(2);
    expect(metricValue(text, 'gateway_worker_restarts_total')).toBe(0);
    // One series per rule version, however many workers serve it; the breaker state is the worst worker's.
    expect(metricValue(text, 'gateway_rules_info')).toBe(1);
    expect(metricValue(text, 'gateway_store_breaker_state')).toBe(0);
  });

  it("the primary's admin listener reads and resets a bucket the workers share (/limits/buckets)", async () => {
    const gw = await startWorkers({ ADMIN_TOKEN: 'workers-operator-token' });
    const auth = { authorization: 'Bearer workers-operator-token' };
    for (let i = 0; i < 3; i++)
      expect((await getOnce(`${gw.url}/limited/x`, { 'x-api-key': 'bucket-key' })).status).toBe(200);
    const bucket = `${gw.adminUrl}/limits/buckets?policy=limited.api-key&api_key=bucket-key`;
    const read = await request(bucket, { headers: auth });
    expect(read.statusCode).toBe(200);
    expect(await read.body.json()).toMatchObject({ policy: 'limited.api-key', remaining: LIMIT - 3 });
    const reset = await request(bucket, { method: 'DELETE', headers: auth });
    expect(reset.statusCode).toBe(200);
    await reset.body.dump();
    expect(await (await request(bucket, { headers: auth })).body.json()).toMatchObject({ remaining: LIMIT });
    expect((await request(bucket)).statusCode).toBe(401);
  });

  it('SIGHUP to the primary reloads the rules in both workers', async () => {
    const gw = await startWorkers();
    const before = (await (await request(`${gw.adminUrl}/readyz`)).body.json()) as { rules: string };
    writeFileSync(rulesFile, rules(LIMIT + 1));
    gw.signal('SIGHUP');
    const reloaded = await Promise.all(
      [1, 2].map((w) => gw.waitForLine((l) => l.msg === 'rules reloaded' && l.worker === w, 10_000)),
    );
    expect(reloaded[0]!.version).toBe(reloaded[1]!.version);
    expect(reloaded[0]!.version).not.toBe(before.rules);
    // Each worker tells the primary over IPC, not in step with its log lines: wait for the primary to know.
    const deadline = Date.now() + 5000;
    let after: { rules: string };
    do after = (await (await request(`${gw.adminUrl}/readyz`)).body.json()) as { rules: string };
    while (after.rules !== reloaded[0]!.version && Date.now() < deadline);
    expect(after.rules).toBe(reloaded[0]!.version);
    expect(metricValue(await scrapeMetrics(gw.adminPort), 'gateway_rules_reloads_total', { result: 'ok' })).toBe(2);
  });

  it('a worker killed with SIGKILL is replaced (logged, counted) and the new one serves', async () => {
    const gw = await startWorkers();
    const old = workerPids(gw).get(1)!;
    process.kill(old, 'SIGKILL');
    const died = await gw.waitForLine((l) => l.msg === 'edge worker exited unexpectedly: restarting it', 10_000);
    expect(died).toMatchObject({ worker: 1, pid: old, signal: 'SIGKILL' });
    expect(died.level).toBe(50);
    const replaced = await gw.waitForLine(
      (l) => l.msg === 'edge worker serving' && l.worker === 1 && l.pid !== old,
      30_000,
    );
    expect(alive(old)).toBe(false);
    expect(alive(replaced.pid as number)).toBe(true);

    await waitForMetric(gw.adminPort, 'gateway_worker_restarts_total', {}, (v) => v === 1, { timeoutMs: 5000 });
    // The new worker's counter starts at 0: it rises only if the new process answers requests.
    expect(await untilWorkerServes(gw, 1)).toBeGreaterThan(0);
    const ready = await request(`${gw.adminUrl}/readyz`);
    expect(await ready.body.json()).toMatchObject({ status: 'ready', workers: { expected: 2, ready: 2 } });
  });

  it('SIGTERM drains both workers (a request in flight completes), then the primary exits 0', async () => {
    const gw = await startWorkers();
    const pids = [...workerPids(gw).values()];
    const slowSeen = () => upstream.seen.filter((r) => r.url === '/slow').length;
    const before = slowSeen();
    const slow = getOnce(`${gw.url}/slow`);
    await within(
      (async () => {
        while (slowSeen() === before) await new Promise((r) => setTimeout(r, 10));
      })(),
      10_000,
      'the slow request reaching the upstream',
    );
    gw.signal('SIGTERM');
    // While the slow request finishes, the one admin listener says the gateway is draining.
    let readyz: { statusCode: number; body: Record<string, unknown> };
    const deadline = Date.now() + 5000;
    do {
      const res = await request(`${gw.adminUrl}/readyz`);
      readyz = { statusCode: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    } while (readyz.statusCode !== 503 && Date.now() < deadline);
    expect(readyz).toMatchObject({ statusCode: 503, body: { status: 'not ready', draining: true } });
    expect(await within(slow, 10_000, 'the slow request')).toEqual({ status: 200, body: 'slow done' });
    expect(await within(gw.exited, 15_000, 'the primary exiting')).toEqual({ code: 0, signal: null });
    for (const w of [1, 2])
      expect(gw.lines().some((l) => l.msg === 'edge worker stopped' && l.worker === w)).toBe(true);
    expect(gw.lines().some((l) => l.msg === 'edge worker exited unexpectedly: restarting it')).toBe(false);
    expect(pids.filter(alive)).toEqual([]);
  });

  it('the bundled services run once, in the primary, and both workers forward to them', async () => {
    const prefix = uniquePrefix('svc');
    const gw = await startWorkers({
      AGENT_SERVER_URL: '',
      CONTROL_PLANE_URL: '',
      CONTROL_PLANE_PREFIX: `${prefix}-cp`,
      API_KEYS_PREFIX: `${prefix}-keys`,
      AGENT_STORE_PREFIX: `${prefix}-agent`,
    });
    for (let i = 0; i < 6; i++) expect((await getOnce(`${gw.url}/info`)).status).toBe(200);
    await untilWorkerServes(gw, 1);
    await untilWorkerServes(gw, 2);
    const lines = gw.lines();
    expect(lines.filter((l) => l.msg === 'control plane ready')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'default deployment serving')).toHaveLength(1);
    // The development key is printed once, by the primary.
    expect(gw.output().match(/Development API key/g)).toHaveLength(1);
  });
});

describe('WORKERS=2, Redis unreachable, FAIL_MODE=open', () => {
  it('the fallback buckets of the two workers together admit the limit, not twice it', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const gw = await startWorkers({
      REDIS_URL: `redis://127.0.0.1:${closedPort}`,
      FAIL_MODE: 'open',
      STORE_TIMEOUT_MS: '200',
    });
    const statuses: number[] = [];
    const served = async (w: number) =>
      metricValue(await scrapeMetrics(gw.adminPort), 'gateway_worker_requests_total', { worker: String(w) });
    // One at a time, each on its own connection, until each worker has answered more than its half of the limit.
    while (statuses.length < 100 && ((await served(1)) <= LIMIT / 2 || (await served(2)) <= LIMIT / 2))
      statuses.push((await getOnce(`${gw.url}/limited/x`, { 'x-api-key': 'one-shared-key' })).status);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(metricValue(await scrapeMetrics(gw.adminPort), 'gateway_store_fallback_total')).toBe(statuses.length);
  });
});

describe('WORKERS=auto without REDIS_URL', () => {
  it('serves with one edge process (no workers forked) and says why when there is more than one CPU', async () => {
    const gw = await startWorkers({ WORKERS: 'auto', REDIS_URL: '' });
    const listening = await gw.waitForLine((l) => l.msg === 'gateway listening');
    expect(listening).toMatchObject({ store: 'memory' });
    expect(listening.workers).toBeUndefined();
    expect(gw.lines().some((l) => l.msg === 'edge worker serving')).toBe(false);
    expect((await getOnce(`${gw.url}/open`)).status).toBe(200);
    const warned = gw.lines().some((l) => String(l.msg).startsWith('WORKERS=auto without REDIS_URL: one edge process'));
    expect(warned).toBe(usableCpus() > 1);
  });
});

describe('WORKERS=2 without REDIS_URL', () => {
  it('does not start: the memory store would give each worker its own buckets', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'gateway.js'), 'start'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ADMIN_PORT: '0', WORKERS: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await within(
      new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c))),
      30_000,
      'the start to fail',
    );
    expect(code).toBe(2);
    expect(output).toContain(
      'gateway start: WORKERS: 2 edge workers need REDIS_URL: with the in-memory store each worker would keep its own buckets and admit up to 2 × every limit',
    );
    expect(output).not.toContain('listening');
  });
});

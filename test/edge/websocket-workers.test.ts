import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { within } from '../helpers/async.ts';
import { rulesDir } from '../helpers/gateway.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { metricValue, scrapeMetrics, waitForMetric } from '../helpers/scrape-metrics.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { closed, nextMessage, openClient, startWsUpstream, type WsUpstream } from '../helpers/ws-upstream.ts';

/**
 * WebSockets through the real program with WORKERS=2 (node:cluster: each new connection goes to the next worker) and
 * the shared Redis: sockets on both workers echo, the upgrade limit and the commands' limit are one bucket across
 * them, the open-socket gauge is summed over the workers, and SIGTERM closes every socket with 1001 and exits 0.
 */

const rules = rulesDir(`
- id: sockets
  match: { method: GET, template: "/threads/{id}/stream/events" }
  limits:
    - { by: api-key, count: 4, per: 3600s, category: WebSocket open }
- id: commands
  match: { method: POST, template: "/threads/{id}/commands" }
  limits:
    - { by: api-key, count: 3, per: 3600s, category: Commands }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`);
const prefix = `t-wsw-${randomBytes(4).toString('hex')}`;
let up: WsUpstream;
let redis: Redis;
let gateway: SpawnedGateway;

beforeAll(async () => {
  up = await startWsUpstream();
  up.onConnection = (ws) =>
    ws.on('message', (data) => {
      const text = String(data);
      const id = text.startsWith('{') ? (JSON.parse(text) as { id: number }).id : null;
      ws.send(id === null ? text : JSON.stringify({ type: 'success', id, result: {} }));
    });
  redis = sharedRedis();
  gateway = await spawnGateway(
    {
      WORKERS: '2',
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: prefix,
      IDENTITY_SECRET: 'websocket-workers-test-secret',
      RULES_DIR: rules.dir,
      AGENT_SERVER_URL: up.url,
      CONTROL_PLANE_URL: up.url,
      FAIL_MODE: 'closed',
      STORE_TIMEOUT_MS: '2000',
      DRAIN_SECONDS: '5',
    },
    60_000,
  );
}, 90_000);

afterAll(async () => {
  await gateway?.stop();
  await deleteByPrefix(redis, prefix);
  redis?.disconnect();
  await up?.close();
  rules.remove();
});

describe('WebSockets on WORKERS=2', () => {
  it('both workers pipe sockets, share the buckets and the gauge, and a drain closes every socket with 1001', async () => {
    const key = `k-${randomUUID()}`;
    const thread = randomUUID();
    const url = `${gateway.url}/threads/${thread}/stream/events`;
    // Four sockets on four connections: the cluster hands them to the workers in turn.
    const sockets = [];
    for (let i = 0; i < 4; i++) sockets.push(await openClient(url, { 'x-api-key': key }));
    for (const [i, ws] of sockets.entries()) {
      ws.send(`hello ${i}`);
      expect(await within(nextMessage(ws), 5000, 'echo')).toBe(`hello ${i}`);
    }
    expect(
      await waitForMetric(gateway.adminPort, 'gateway_websockets_open', {}, (v) => v === 4, { timeoutMs: 10_000 }),
    ).toBe(4);
    // Access-log lines are written in batches (every 50 ms): wait for all four before reading which worker served.
    const upgraded = () => gateway.lines().filter((l) => l.msg === 'request' && l.status === 101);
    for (let waited = 0; upgraded().length < 4 && waited < 5000; waited += 50)
      await new Promise((r) => setTimeout(r, 50));
    expect(new Set(upgraded().map((l) => l.worker))).toEqual(new Set([1, 2]));
    const refused = await openClient(url, { 'x-api-key': key }).then(
      () => null,
      (e: { status: number }) => e,
    );
    expect(refused?.status).toBe(429);
    // Three run.start commands over the four sockets (on both workers), then the fourth is refused.
    for (let i = 0; i < 3; i++) {
      sockets[i]!.send(JSON.stringify({ id: i, method: 'run.start', params: {} }));
      expect(JSON.parse(await within(nextMessage(sockets[i]!), 5000, 'answer'))).toMatchObject({ id: i });
    }
    const refusedCommand = closed(sockets[3]!);
    sockets[3]!.send(JSON.stringify({ id: 9, method: 'run.start', params: {} }));
    expect((await within(refusedCommand, 5000, 'close')).code).toBe(4429);
    const metrics = await scrapeMetrics(gateway.adminPort);
    expect(metricValue(metrics, 'gateway_websocket_commands_total', { rule: 'commands', decision: 'denied' })).toBe(1);
    // SIGTERM: the three left get 1001, and the program exits 0.
    const closes = sockets.slice(0, 3).map((ws) => closed(ws));
    gateway.signal('SIGTERM');
    for (const c of await within(Promise.all(closes), 10_000, 'drain closes'))
      expect(c).toEqual({ code: 1001, reason: 'gateway draining' });
    expect((await within(gateway.exited, 15_000, 'exit')).code).toBe(0);
  }, 60_000);
});

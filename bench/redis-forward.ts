/**
 * A revision's Redis through the host's forwarder (src/services/revision-host/local/redis-forward.ts) beside a direct
 * connection as the same deployment user: a store-heavy call, an item put (FCALL) and a get, from 32 concurrent
 * callers on one ioredis client, against a private redis-server. Correctness first (both sides read back what they
 * wrote), then alternating 1 s rounds per side; prints ops/s and the ratio. BENCH_BASELINE_STORE=<path of another
 * redis-item-store.ts> adds a side with that store, direct (e.g. the EVALSHA one this replaced, from a checkout of
 * an older revision), its user allowed EVAL.
 *
 *   npm run bench:redis-forward
 *   BENCH_ROUNDS=5 BENCH_BASELINE_STORE=/tmp/old/src/services/agent-server/store/redis-item-store.ts npm run bench:redis-forward
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BaseStore } from '@langchain/langgraph-checkpoint';
import { Redis } from 'ioredis';
import pino from 'pino';
import { loadItemFunctions } from '../src/services/agent-server/store/item-functions.ts';
import { RedisItemStore } from '../src/services/agent-server/store/redis-item-store.ts';
import { deploymentRedisUrl, deploymentUserRules } from '../src/services/control-plane/serving/redis-acl-rules.ts';
import { RedisBudget, measureRedisBytes } from '../src/services/revision-host/local/redis-budget.ts';
import { startRedisForward } from '../src/services/revision-host/local/redis-forward.ts';
import { startRedis } from '../support/redis-server.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = 32;
const server = await startRedis();
const admin = new Redis(server.url);
const prefix = 'deployment:bench';
await admin.call('ACL', 'SETUSER', 'bench', ...deploymentUserRules(prefix, 'pw'));
await admin.call('ACL', 'SETUSER', 'bench-eval', ...deploymentUserRules(prefix, 'pw'), '+eval', '+evalsha');
await loadItemFunctions(admin);
const dir = mkdtempSync(join(tmpdir(), 'bench-redis-forward-'));
const log = pino({ level: 'warn' });
const budget = new RedisBudget({
  maxBytes: 1024 ** 3,
  intervalMs: 30_000,
  measure: () => measureRedisBytes(admin, prefix),
  log,
});
await budget.start();
const forward = await startRedisForward({
  socketPath: join(dir, 'redis.sock'),
  target: { url: deploymentRedisUrl(server.url, 'bench', 'pw') },
  maxConnections: 16,
  idleMs: 300_000,
  maxRequestBytes: 16 * 1024 * 1024,
  budget,
  log,
});
const asUser = (user: string) => new Redis(deploymentRedisUrl(server.url, user, 'pw'), { enableReadyCheck: false });
const sides: [string, BaseStore][] = [
  ['direct', new RedisItemStore(asUser('bench'), { prefix: `${prefix}:direct` })],
  [
    'forwarded',
    new RedisItemStore(new Redis({ path: forward.socketPath, enableReadyCheck: false }), { prefix: `${prefix}:fwd` }),
  ],
];
if (process.env.BENCH_BASELINE_STORE) {
  const { RedisItemStore: Old } = (await import(process.env.BENCH_BASELINE_STORE)) as {
    RedisItemStore: new (c: Redis, o: { prefix: string }) => BaseStore;
  };
  sides.push(['baseline store, direct', new Old(asUser('bench-eval'), { prefix: `${prefix}:old` })]);
}

let n = 0;
async function call(store: BaseStore): Promise<void> {
  const key = `k${++n % 1000}`;
  await store.put(['bench', 'ns'], key, { text: 'x'.repeat(200), n });
  if (!(await store.get(['bench', 'ns'], key))) throw new Error('read back nothing');
}
async function run(store: BaseStore, ms: number): Promise<number> {
  let done = 0;
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) await call(store).then(() => done++);
    }),
  );
  return done;
}

for (const [, store] of sides) await run(store, 300); // correctness (a failed read throws) and warm-up
const totals = new Map(sides.map(([name]) => [name, 0]));
for (let round = 0; round < ROUNDS; round++)
  for (const [name, store] of sides) totals.set(name, totals.get(name)! + (await run(store, 1000)));
const perSecond = (name: string) => totals.get(name)! / ROUNDS;
for (const [name] of sides)
  console.log(
    `${name.padEnd(24)} ${perSecond(name).toFixed(0).padStart(7)} put+get/s (${(perSecond(name) / perSecond('direct')).toFixed(2)} of direct)`,
  );

for (const [, store] of sides) (store as unknown as { client: Redis }).client.disconnect();
budget.close();
await forward.close();
admin.disconnect();
await server.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);

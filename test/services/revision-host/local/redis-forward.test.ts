import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadItemFunctions } from '../../../../src/services/agent-server/store/item-functions.ts';
import { RedisItemStore } from '../../../../src/services/agent-server/store/redis-item-store.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import {
  deploymentRedisUrl,
  deploymentUserName,
  deploymentUserRules,
} from '../../../../src/services/control-plane/serving/redis-acl-rules.ts';
import { RedisBudget, measureRedisBytes } from '../../../../src/services/revision-host/local/redis-budget.ts';
import { startRedisForward, type RedisForward } from '../../../../src/services/revision-host/local/redis-forward.ts';
import { startRedis } from '../../../../support/redis-server.ts';
import { storeContract } from '../../agent-server/store/agent-store-contract.ts';
import { itemQuotaContract } from '../../agent-server/store/item-quota-contract.ts';
import { itemTtlContract } from '../../agent-server/store/item-ttl-contract.ts';

/**
 * The forwarder a revision reaches its Redis through (redis-forward.ts): the stores' contracts pass through it as the
 * deployment's user, without the client knowing any credential; it bounds connections, requests and bytes.
 */
const server = await startRedis();
const admin = new Redis(server.url, { maxRetriesPerRequest: 2 });
await admin.config('SET', 'requirepass', 'platform-secret');
await admin.auth('platform-secret');
const dataPrefix = 'deployment:d1';
const user = deploymentUserName('d1');
const password = randomBytes(16).toString('hex');
await admin.call('ACL', 'SETUSER', user, ...deploymentUserRules(dataPrefix, password));
await loadItemFunctions(admin);
const dir = mkdtempSync(join(tmpdir(), 'redis-forward-test-'));
const log = pino({ level: 'silent' });
const budget = new RedisBudget({
  maxBytes: 2 * 1024 * 1024,
  intervalMs: 200,
  measure: () => measureRedisBytes(admin, dataPrefix),
  log,
});
await budget.start();
let made = 0;
async function forward(over: Partial<Parameters<typeof startRedisForward>[0]> = {}): Promise<RedisForward> {
  return startRedisForward({
    socketPath: join(dir, `redis-${++made}.sock`),
    target: { url: deploymentRedisUrl(`redis://127.0.0.1:${server.port}/0`, user, password) },
    maxConnections: 4,
    idleMs: 60_000,
    maxRequestBytes: 1024 * 1024,
    budget,
    log,
    ...over,
  });
}
const main = await forward({ maxConnections: 16 });
const opened: Redis[] = [];
const viaForward = (f: RedisForward = main) => {
  const c = new Redis({ path: f.socketPath, maxRetriesPerRequest: 1, enableReadyCheck: false });
  opened.push(c);
  return c;
};
const clients = [viaForward(), viaForward()] as const;

afterAll(async () => {
  budget.close();
  // Disconnected before the forwarder goes, or they would try to reconnect to its removed socket.
  for (const c of opened) c.disconnect();
  await main.close();
  admin.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

storeContract('through the forwarder', () =>
  Promise.resolve(new RedisAgentStore(clients[0], { prefix: `${dataPrefix}:store${++made}` })),
);
const prefixes = new WeakMap<object, string>();
itemQuotaContract(
  'through the forwarder',
  () => {
    const prefix = `${dataPrefix}:items${++made}`;
    const store = new RedisItemStore(clients[0], { prefix });
    prefixes.set(store, prefix);
    return store;
  },
  (store) => new RedisItemStore(clients[1], { prefix: prefixes.get(store)! }),
);
itemTtlContract(
  'through the forwarder',
  (now) => new RedisItemStore(clients[0], { prefix: `${dataPrefix}:ttl${++made}`, now }),
);

describe('the Redis forwarder', () => {
  it('runs as the deployment user: its prefix only, no EVAL, no AUTH, SELECT or HELLO of the client', async () => {
    const c = clients[0];
    expect(await c.set(`${dataPrefix}:k`, 'v')).toBe('OK');
    expect(await c.call('ACL', 'WHOAMI').catch((e: Error) => e.message)).toMatch(/NOPERM/);
    await expect(c.set('elsewhere', 'v')).rejects.toThrow(/NOPERM/);
    await expect(c.eval('while true do end', 0)).rejects.toThrow(/NOPERM/);
    await expect(c.call('AUTH', 'default', 'platform-secret')).rejects.toThrow(/gateway's/);
    await expect(c.call('SELECT', '1')).rejects.toThrow(/gateway's/);
    await expect(c.call('HELLO', '3')).rejects.toThrow(/gateway's/);
    // Pipelined, with refusals of its own between Redis's replies: every answer in order.
    const p = c.pipeline();
    for (let i = 0; i < 50; i++) p.set(`${dataPrefix}:p${i}`, String(i)).call('AUTH', 'x').get(`${dataPrefix}:p${i}`);
    const answers = (await p.exec())!;
    for (let i = 0; i < 50; i++) {
      expect(answers[i * 3]![1]).toBe('OK');
      expect(answers[i * 3 + 1]![0]?.message).toMatch(/gateway's/);
      expect(answers[i * 3 + 2]![1]).toBe(String(i));
    }
  });

  it('refuses a request over its size with an error, and closes that connection', async () => {
    const c = viaForward();
    c.on('error', () => {});
    await expect(c.set(`${dataPrefix}:big`, 'x'.repeat(2 * 1024 * 1024))).rejects.toThrow(/over 1024 KiB/);
    c.disconnect();
    expect(await admin.exists(`${dataPrefix}:big`)).toBe(0);
  });

  it('closes connections beyond its cap and idle ones', async () => {
    const f = await forward({ maxConnections: 2, idleMs: 300 });
    const sockets = Array.from({ length: 5 }, () => connect(f.socketPath));
    const closed = sockets.map((s) => new Promise((r) => s.on('close', r)));
    for (const s of sockets) s.on('error', () => {});
    await new Promise((r) => setTimeout(r, 100));
    expect(f.connections()).toBe(2);
    await Promise.all(closed); // the three refused at once, the two others once idle
    await new Promise((r) => setTimeout(r, 50));
    expect(f.connections()).toBe(0);
    await f.close();
  });

  it('refuses growing writes once over the budget, keeps reads and deletes, and a transaction whole', async () => {
    const c = viaForward();
    const chunk = 'x'.repeat(256 * 1024);
    let refused = '';
    for (let i = 0; i < 20 && !refused; i++)
      await c.set(`${dataPrefix}:fill${i}`, chunk).catch((e: Error) => (refused = e.message));
    expect(refused).toMatch(/^OOM deployment over its Redis budget of 2 MiB/);
    const used = await measureRedisBytes(admin, dataPrefix);
    // Past the budget by one value at most, each as Redis's allocator holds it (up to a quarter more).
    expect(used).toBeLessThan(2 * 1024 * 1024 + 2 * 1.25 * chunk.length);
    expect(await c.get(`${dataPrefix}:fill0`)).toBe(chunk);
    const tx = await c
      .multi()
      .get(`${dataPrefix}:fill0`)
      .set(`${dataPrefix}:tx`, '1')
      .exec()
      .catch((e: Error) => e);
    expect(String(tx)).toMatch(/EXECABORT/);
    expect(await admin.exists(`${dataPrefix}:tx`)).toBe(0);
    for (let i = 0; i < 20; i++) await c.del(`${dataPrefix}:fill${i}`);
    await budget.measureNow();
    expect(await c.set(`${dataPrefix}:after`, 'fits')).toBe('OK');
    c.disconnect();
  });
});

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreUnavailable } from '../../../src/services/control-plane/errors.ts';
import { RedisControlPlaneStore } from '../../../src/services/control-plane/store/redis-store.ts';
import { deleteByPrefix, keysByPrefix } from '../../helpers/redis-keys.ts';
import { startRedis } from '../../../support/redis-server.ts';
import { deploymentRecord, revisionRecord, storeContract } from './store-contract.ts';
import { sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';

/** The shared Redis, only under a unique prefix, removed afterwards. */
const RUN = uniquePrefix('test:cp');
const shared = sharedRedis();

afterAll(async () => {
  await deleteByPrefix(shared, RUN);
  await shared.quit();
});

storeContract('redis', async () => {
  const prefix = `${RUN}:${randomUUID()}`;
  const other = sharedRedis();
  return {
    store: new RedisControlPlaneStore(shared, 'us', { prefix }),
    peer: new RedisControlPlaneStore(other, 'us', { prefix, ownsClient: true }),
    async close() {
      await other.quit();
      await deleteByPrefix(shared, prefix);
    },
  };
});

describe('RedisControlPlaneStore regions', () => {
  it('keeps each region under its own keys; an instance never serves a record of another region, even one planted under its keys', async () => {
    const prefix = `${RUN}:${randomUUID()}`;
    const us = new RedisControlPlaneStore(shared, 'us', { prefix });
    const eu = new RedisControlPlaneStore(shared, 'eu', { prefix });
    const d0 = deploymentRecord({}, 'us');
    const first = revisionRecord(d0, 1);
    const d = { ...d0, latest_revision_id: first.id };
    await us.createDeployment(d, first);

    expect(await eu.getDeployment('ws-a', d.id)).toBeNull();
    expect(await eu.listDeployments('ws-a', {}, { limit: 100, offset: 0 })).toEqual([]);
    expect(await eu.getRevision(d.id, first.id)).toBeNull();
    expect(await eu.unfinishedRevisions()).toEqual([]);
    const keys = await keysByPrefix(shared, prefix);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.startsWith(`${prefix}:us:`))).toBe(true);

    // Copied into the EU keyspace by hand (an operator mistake, a bad migration): still not served.
    await shared.set(`${prefix}:eu:dep:${d.id}`, JSON.stringify(d));
    await shared.zadd(`${prefix}:eu:tenant:ws-a`, 1, d.id);
    await shared.set(`${prefix}:eu:rev:${d.id}:${first.id}`, JSON.stringify(first));
    expect(await eu.getDeployment('ws-a', d.id)).toBeNull();
    expect(await eu.listDeployments('ws-a', {}, { limit: 100, offset: 0 })).toEqual([]);
    expect(await eu.getRevision(d.id, first.id)).toBeNull();
    expect(await us.getDeployment('ws-a', d.id)).toEqual(d);
    await deleteByPrefix(shared, prefix);
  });
});

describe('RedisControlPlaneStore failures', () => {
  it('a Redis that is gone is StoreUnavailable, not a crash or a hang', async () => {
    const server = await startRedis();
    const client = new Redis({
      host: '127.0.0.1',
      port: server.port,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    client.on('error', () => {});
    await client.connect();
    const store = new RedisControlPlaneStore(client, 'us', { prefix: 'cp' });
    const d0 = deploymentRecord();
    const first = revisionRecord(d0, 1);
    await store.createDeployment({ ...d0, latest_revision_id: first.id }, first);
    await server.stop();
    const started = Date.now();
    await expect(store.getDeployment('ws-a', d0.id)).rejects.toBeInstanceOf(StoreUnavailable);
    await expect(store.updateRevision(d0.id, first.id, (r) => r)).rejects.toBeInstanceOf(StoreUnavailable);
    expect(Date.now() - started).toBeLessThan(5000);
    client.disconnect();
  });
});

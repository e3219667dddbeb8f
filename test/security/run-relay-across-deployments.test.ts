import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deploymentRedisUrl,
  deploymentUserName,
  deploymentUserRules,
} from '../../src/services/control-plane/serving/redis-acl-rules.ts';
import { RedisRunRelay } from '../../src/services/agent-server/relay/redis-run-relay.ts';
import type { RelayedCancel } from '../../src/services/agent-server/relay/run-relay.ts';
import type { Frame } from '../../src/services/agent-server/runs/frames.ts';
import { startRedisForward, type RedisForward } from '../../src/services/revision-host/local/redis-forward.ts';
import { startRedis } from '../../support/redis-server.ts';

/**
 * The run relay of a deployment's servers goes through the forwarder its revision reaches Redis by, as the
 * deployment's own Redis user (redis-acl-rules.ts): its streams (XADD, XREAD BLOCK), claims and messages (PUBLISH,
 * SUBSCRIBE) on its prefix pass; another deployment, through its own forwarder and user, can neither read its runs'
 * events nor cancel its runs nor hear its messages.
 */
const server = await startRedis();
const admin = new Redis(server.url, { maxRetriesPerRequest: 2 });
const dir = mkdtempSync(join(tmpdir(), 'relay-acl-'));
const log = pino({ level: 'silent' });
const forwards: RedisForward[] = [];
const clients: Redis[] = [];

async function deployment(id: string): Promise<{ prefix: string; forward: RedisForward; client: () => Redis }> {
  const password = randomBytes(16).toString('hex');
  const prefix = `deployment:${id}`;
  await admin.call('ACL', 'SETUSER', deploymentUserName(id), ...deploymentUserRules(prefix, password));
  const forward = await startRedisForward({
    socketPath: join(dir, `${id}.sock`),
    target: { url: deploymentRedisUrl(server.url, deploymentUserName(id), password) },
    maxConnections: 16,
    idleMs: 60_000,
    maxRequestBytes: 1024 * 1024,
    budget: null,
    log,
  });
  forwards.push(forward);
  return {
    prefix,
    forward,
    client() {
      const c = new Redis({ path: forward.socketPath, maxRetriesPerRequest: 1, enableReadyCheck: false });
      clients.push(c);
      return c;
    },
  };
}

const mine = await deployment('d1');
const theirs = await deployment('d2');

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all(forwards.map((f) => f.close()));
  await admin.quit();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

const frames = (n: number): Frame[] =>
  Array.from({ length: n }, (_, i) => ({ event: 'custom', data: JSON.stringify({ i }), id: String(i) }));

async function readAll(iterable: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of iterable) out.push(f);
  return out;
}

describe('the run relay through the forwarder, as the deployment user', () => {
  it('streams a run, resumes it, delivers cancels and hands a thread over', async () => {
    const a = new RedisRunRelay(mine.client(), { prefix: mine.prefix });
    const b = new RedisRunRelay(mine.client(), { prefix: mine.prefix });
    const cancels: [string, RelayedCancel][] = [];
    a.onCancel((runId, reason) => cancels.push([runId, reason]));
    const runId = randomUUID();
    const threadId = randomUUID();
    expect(await a.claimThread(threadId)).toBe(true);
    expect(await b.claimThread(threadId)).toBe(false);
    a.started(runId, threadId);
    const ac = new AbortController();
    const live = readAll(b.follow(runId, { seen: 0, signal: ac.signal, stillGoing: async () => true }));
    const sent = frames(5);
    for (const f of sent) a.publish(runId, f);
    a.ended(runId);
    expect(await live).toEqual(sent);
    expect(await readAll(b.follow(runId, { seen: 3, signal: ac.signal, stillGoing: async () => true }))).toEqual(
      sent.slice(3),
    );
    expect(await b.live()).not.toContain(runId);

    // a's SUBSCRIBE confirmed by Redis
    await expect
      .poll(async () => ((await admin.call('PUBSUB', 'NUMSUB', `${mine.prefix}:relay:cancel`)) as [string, number])[1])
      .toBe(1);
    await b.cancel(runId, 'interrupt');
    await expect.poll(() => cancels).toEqual([[runId, 'interrupt']]);

    const waited = b.awaitThread(threadId, ac.signal);
    a.releaseThread(threadId);
    await waited;
    expect(await a.claimThread(threadId)).toBe(false);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('many readers of runs of another server', () => {
  it('get every frame, with at most 8 connections of their own (the others poll the shared one)', async () => {
    const own = await deployment('d3'); // a forwarder of its own: its connections are this test's only
    const a = new RedisRunRelay(own.client(), { prefix: own.prefix });
    const b = new RedisRunRelay(own.client(), { prefix: own.prefix });
    const runId = randomUUID();
    a.started(runId, randomUUID());
    const readers = Array.from({ length: 12 }, () =>
      readAll(b.follow(runId, { seen: 0, signal: new AbortController().signal, stillGoing: async () => true })),
    );
    const sent = frames(40);
    for (const f of sent.slice(0, 20)) a.publish(runId, f);
    await expect.poll(() => own.forward.connections()).toBe(2 + 8); // a's and b's, and 8 readers'
    for (const f of sent.slice(20)) a.publish(runId, f);
    a.ended(runId);
    for (const got of await Promise.all(readers)) expect(got).toEqual(sent);
    await expect.poll(() => own.forward.connections()).toBe(2);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('another deployment', () => {
  it('cannot read a run stream, send a cancel, or hear the messages of this one', async () => {
    const own = new RedisRunRelay(mine.client(), { prefix: mine.prefix });
    const heard: string[] = [];
    own.onCancel((runId) => heard.push(runId));
    await expect
      .poll(async () => ((await admin.call('PUBSUB', 'NUMSUB', `${mine.prefix}:relay:cancel`)) as [string, number])[1])
      .toBe(1);
    const runId = randomUUID();
    own.started(runId, randomUUID());
    own.publish(runId, frames(1)[0]!);

    const hostile = theirs.client();
    const key = `${mine.prefix}:relay:run:${runId}`;
    await expect(hostile.xread('STREAMS', key, '0-0')).rejects.toThrow(/NOPERM/);
    await expect(hostile.xrevrange(key, '+', '-')).rejects.toThrow(/NOPERM/);
    await expect(hostile.xadd(key, '*', 'e', 'values', 'd', '{}')).rejects.toThrow(/NOPERM/);
    await expect(hostile.hkeys(`${mine.prefix}:relay:live`)).rejects.toThrow(/NOPERM/);
    await expect(
      hostile.publish(`${mine.prefix}:relay:cancel`, JSON.stringify({ run_id: runId, reason: 'cancel' })),
    ).rejects.toThrow(/NOPERM/);
    await expect(theirs.client().subscribe(`${mine.prefix}:relay:cancel`)).rejects.toThrow(/NOPERM/);
    // Its own relay named with this deployment's prefix fails the same way.
    const impostor = new RedisRunRelay(theirs.client(), { prefix: mine.prefix });
    const ac = new AbortController();
    await expect(
      readAll(impostor.follow(runId, { seen: 0, signal: ac.signal, stillGoing: async () => true })),
    ).rejects.toThrow(/NOPERM/);
    await expect(impostor.cancel(runId, 'cancel')).rejects.toThrow(/NOPERM/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toEqual([]);
    // Its own channel is its own: this deployment hears nothing of it.
    await new RedisRunRelay(theirs.client(), { prefix: theirs.prefix }).cancel(runId, 'cancel');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toEqual([]);
    await Promise.all([own.close(), impostor.close()]);
  });
});

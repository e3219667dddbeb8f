import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { LogEntry } from '../../../src/services/control-plane/serving/runtime-logs.ts';
import { SharedRuntimeLogs } from '../../../src/services/control-plane/serving/shared-runtime-logs.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { eventually } from './helpers.ts';

/**
 * Runtime logs in a Redis stream per deployment (shared Redis, a prefix of this run's own): bounded in lines and
 * bytes, cursors, and what one gateway adds another reads and follows, until a delete ends its followers.
 */

const RUN = uniquePrefix('test:shared-runtime-logs');
const redis = sharedRedis();
const log = pino({ level: 'silent' });
const logs = (o: { maxLines?: number; maxBytes?: number } = {}) =>
  new SharedRuntimeLogs({ redis, prefix: RUN, log, pollMs: 50, ...o });
/** Adds are sent without waiting (the pipe of a process must not wait on Redis): a PING after them has them all. */
const flushed = () => redis.ping();

afterAll(async () => {
  await deleteByPrefix(redis, RUN);
  await redis.quit();
});

describe('shared runtime logs', () => {
  it('keeps at most maxLines lines and maxBytes per deployment, newest last, each deployment its own', async () => {
    const l = logs({ maxLines: 3 });
    for (let i = 1; i <= 5; i++) l.add('a', 'r1', 'stdout', `a${i}`);
    l.add('b', 'r2', 'stderr', 'b1');
    await flushed();
    expect((await l.read('a', { limit: 10 })).map((e) => e.text)).toEqual(['a3', 'a4', 'a5']);
    expect(await l.read('b', { limit: 10 })).toMatchObject([{ text: 'b1', revision_id: 'r2', stream: 'stderr' }]);
    expect((await l.read('a', { limit: 2 })).map((e) => e.text)).toEqual(['a4', 'a5']);

    const small = logs({ maxBytes: 1000 });
    for (let i = 0; i < 50; i++) small.add('c', 'r', 'stdout', `${i} ${'x'.repeat(200)}`);
    await flushed();
    const kept = await small.read('c', { limit: 2000 });
    expect(kept.length).toBeLessThan(5);
    expect(kept.at(-1)!.text.startsWith('49 ')).toBe(true);
  });

  it('since a cursor: the first `limit` lines after it; lines are cleaned as in memory', async () => {
    const l = logs();
    for (let i = 1; i <= 5; i++) l.add('d', 'r', 'stdout', `l${i}\u001b[31m`);
    await flushed();
    const [first, second] = await l.read('d', { limit: 2, since: { cursor: 0 } });
    expect([first!.text, second!.text]).toEqual(['l1', 'l2']);
    const rest = await l.read('d', { limit: 10, since: { cursor: Number(second!.id) } });
    expect(rest.map((e) => e.text)).toEqual(['l3', 'l4', 'l5']);
  });

  it('another gateway reads and follows what one adds; a delete ends the followers', async () => {
    const here = logs();
    const there = logs();
    const seen: (LogEntry | null)[] = [];
    const stop = there.subscribe('e', (e) => seen.push(e));
    here.add('e', 'r', 'stdout', 'one');
    here.add('e', 'r', 'stdout', 'two');
    await eventually(() => seen.length === 2 || null, 3000, 'two lines followed');
    expect(seen.map((e) => e?.text)).toEqual(['one', 'two']);
    expect((await there.read('e', { limit: 10 })).map((e) => e.text)).toEqual(['one', 'two']);
    here.forget('e');
    await eventually(() => seen.at(-1) === null || null, 3000, 'the follower ended');
    expect(await there.read('e', { limit: 10 })).toEqual([]);
    stop();
  });
});

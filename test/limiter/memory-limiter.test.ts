import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_KEYS, MemoryLimiter } from '../../src/limiter/memory-limiter.ts';
import { limiterContract } from './contract.ts';

function fakeClock(start = 1_700_000_000_000.25) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

limiterContract('memory', async () => {
  const clock = fakeClock();
  const limiter = new MemoryLimiter({ now: clock.now });
  return { limiter, key: (name) => `test:${name}`, advance: clock.advance, close: () => limiter.close() };
});

/** A gc() even when node runs without --expose-gc (vitest workers do). */
function collectGarbage(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('MemoryLimiter bounds', () => {
  it('drops buckets that are full again when new keys arrive', () => {
    const clock = fakeClock();
    const limiter = new MemoryLimiter({ now: clock.now });
    for (let i = 0; i < 100; i++) limiter.consumeSync([{ key: `k${i}`, capacity: 10, perSeconds: 1 }]);
    expect(limiter.size).toBe(100);
    clock.advance(1_000); // every bucket is full again: nothing to remember
    for (let i = 0; i < 30; i++) limiter.consumeSync([{ key: `new${i}`, capacity: 10, perSeconds: 1 }]);
    expect(limiter.size).toBe(100 - 2 * 30 + 30); // each insert swept two idle ones
  });

  it('at maxKeys evicts a full bucket first, else the least recently used one', () => {
    const clock = fakeClock();
    const limiter = new MemoryLimiter({ maxKeys: 3, now: clock.now });
    const take = (key: string, perSeconds = 60) => limiter.consumeSync([{ key, capacity: 1, perSeconds }]);
    take('short', 1);
    take('a');
    take('b');
    clock.advance(1_000); // 'short' is full again
    expect(take('a').allowed).toBe(false); // touches 'a': now 'short' < 'b' < 'a'
    expect(take('c').allowed).toBe(true); // sweeps 'short' (full)
    expect(limiter.size).toBe(3);
    expect(take('d').allowed).toBe(true); // nothing full: evicts 'b', the least recently used
    expect(limiter.size).toBe(3);
    expect(take('a').allowed).toBe(false); // 'a' kept its state
    // An evicted bucket that was not full is forgotten: its identity starts over with a full bucket.
    expect(take('b').allowed).toBe(true);
  });

  it('stays within maxKeys and its memory bound through 1,000,000 distinct identities', () => {
    const gc = collectGarbage();
    const clock = fakeClock();
    const limiter = new MemoryLimiter({ now: clock.now });
    expect(limiter.maxKeys).toBe(DEFAULT_MAX_KEYS);
    gc();
    const before = process.memoryUsage();
    let largest = 0;
    for (let i = 0; i < 1_000_000; i++) {
      // Production-shaped keys (47 chars), all in a refilling state, so only eviction can bound the map.
      const out = limiter.consumeSync([
        { key: `rl:us:runs-query:api-key:${i.toString(36).padStart(22, '0')}`, capacity: 15, perSeconds: 60 },
      ]);
      if (!out.allowed) throw new Error('a fresh identity was denied');
      if (limiter.size > largest) largest = limiter.size;
      if (i % 1000 === 0) clock.advance(1); // a million requests over a few seconds; no bucket refills fully
    }
    gc();
    const after = process.memoryUsage();
    expect(largest).toBe(DEFAULT_MAX_KEYS);
    // Measured ~150 bytes per entry (heap + typed arrays) after such churn; asserted with room for GC timing.
    const grown = after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers);
    console.info(
      `memory limiter: ${limiter.size} keys, ${(grown / limiter.size).toFixed(0)} bytes per key after 1,000,000 identities`,
    );
    expect(grown).toBeLessThan(DEFAULT_MAX_KEYS * 200);
  });
});

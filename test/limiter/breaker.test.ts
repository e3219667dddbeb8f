import { describe, expect, it } from 'vitest';
import { BreakerLimiter, type BreakerState } from '../../src/limiter/breaker.ts';
import { StoreError, type Limiter } from '../../src/limiter/types.ts';

/** A store whose health the test switches, counting the calls that reach it. */
function switchableStore() {
  const store = {
    healthy: true,
    calls: 0,
    async consume() {
      store.calls++;
      if (!store.healthy) throw new StoreError('down');
      return { allowed: true, buckets: [], retryAfterMs: 0 };
    },
    async close() {},
  };
  return store satisfies Limiter;
}

const bucket = [{ key: 'k', capacity: 1, perSeconds: 1 }];

describe('BreakerLimiter', () => {
  it('opens after the threshold, fails fast without calling the store, probes after the cooldown, and closes when the store is back', async () => {
    let now = 0;
    const states: BreakerState[] = [];
    const store = switchableStore();
    const breaker = new BreakerLimiter(store, {
      failureThreshold: 3,
      cooldownMs: 1000,
      now: () => now,
      onStateChange: (s) => states.push(s),
    });

    store.healthy = false;
    for (let i = 0; i < 3; i++) await expect(breaker.consume(bucket)).rejects.toBeInstanceOf(StoreError);
    expect(breaker.state).toBe('open');
    expect(store.calls).toBe(3);

    await expect(breaker.consume(bucket)).rejects.toThrow('circuit open');
    expect(store.calls).toBe(3); // no call reached the dead store

    now = 1000; // cooldown over: one probe, still failing → open again
    await expect(breaker.consume(bucket)).rejects.toThrow('down');
    expect(store.calls).toBe(4);
    expect(breaker.state).toBe('open');

    store.healthy = true;
    now = 2500;
    await expect(breaker.consume(bucket)).resolves.toMatchObject({ allowed: true });
    expect(breaker.state).toBe('closed');
    expect(states).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
  });

  it('lets one probe through at a time while half-open', async () => {
    let now = 0;
    let release!: () => void;
    const store: Limiter = {
      consume: () =>
        now < 100
          ? Promise.reject(new StoreError('down'))
          : new Promise((r) => (release = () => r({ allowed: true, buckets: [], retryAfterMs: 0 }))),
      close: async () => {},
    };
    const breaker = new BreakerLimiter(store, { failureThreshold: 1, cooldownMs: 50, now: () => now });
    await expect(breaker.consume(bucket)).rejects.toThrow('down');
    now = 100;
    const probe = breaker.consume(bucket);
    await expect(breaker.consume(bucket)).rejects.toThrow('circuit open');
    release();
    await expect(probe).resolves.toMatchObject({ allowed: true });
    expect(breaker.state).toBe('closed');
  });

  it('does not count errors that are not store errors', async () => {
    const breaker = new BreakerLimiter(
      { consume: () => Promise.reject(new TypeError('bug')), close: async () => {} },
      { failureThreshold: 1 },
    );
    await expect(breaker.consume(bucket)).rejects.toBeInstanceOf(TypeError);
    expect(breaker.state).toBe('closed');
  });

  it('counts calls that were in flight together as one failure (a stalled event loop times them all out at once)', async () => {
    let now = 0;
    const failLater: (() => void)[] = [];
    const store: Limiter = {
      consume: () => new Promise((_, reject) => failLater.push(() => reject(new StoreError('timeout')))),
      close: async () => {},
    };
    const breaker = new BreakerLimiter(store, { failureThreshold: 3, now: () => now });
    const inFlight = Array.from({ length: 50 }, () => breaker.consume(bucket).catch((e: unknown) => e));
    now = 60;
    failLater.forEach((f) => f());
    await Promise.all(inFlight);
    expect(breaker.state).toBe('closed');
    // Calls started afterwards are new failures: the third opens the circuit.
    for (let i = 0; i < 2; i++) {
      const call = breaker.consume(bucket).catch((e: unknown) => e);
      now += 10;
      failLater.pop()!();
      await call;
    }
    expect(breaker.state).toBe('open');
  });
});

import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  LiveOverrides,
  MemoryOverrideStore,
  overridden,
  RedisOverrideStore,
  type OverrideStore,
} from '../../src/limiter/overrides.ts';
import type { Limit } from '../../src/rules/types.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../helpers/shared-redis.ts';

const redis: Redis = sharedRedis();
const prefix = uniquePrefix('t-overrides');
afterAll(async () => {
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

function contract(name: string, make: () => OverrideStore) {
  describe(`override store: ${name}`, () => {
    it('keeps overrides per organisation and policy, and moves its version on every change', async () => {
      const store = make();
      const v0 = await store.version();
      await store.set('acme', 'api.api-key', { count: 5, perSeconds: null });
      await store.set('acme', 'guard.runs', { concurrent: 2 });
      await store.set('beta', 'api.api-key', { count: 9, perSeconds: 60 });
      expect(await store.version()).not.toBe(v0);
      expect(Object.fromEntries(await store.read())).toEqual({
        acme: { 'api.api-key': { count: 5, perSeconds: null }, 'guard.runs': { concurrent: 2 } },
        beta: { 'api.api-key': { count: 9, perSeconds: 60 } },
      });
      const live = new LiveOverrides(store, 20);
      await live.start();
      expect(live.of('beta')).toEqual({ 'api.api-key': { count: 9, perSeconds: 60 } });
      const before = live.generation;
      expect(await store.unset('acme', 'guard.runs')).toBe(1);
      expect(await store.unset('beta')).toBe(1);
      await live.refresh();
      expect(live.generation).toBe(before + 1);
      expect(live.of('beta')).toBeUndefined();
      expect(live.of('acme')).toEqual({ 'api.api-key': { count: 5, perSeconds: null } });
      await live.close();
    });
  });
}

contract('memory', () => new MemoryOverrideStore());
contract('Redis', () => new RedisOverrideStore(redis, prefix, false));

describe('overridden', () => {
  const rate: Limit = {
    by: 'api-key',
    count: 10,
    perSeconds: 60,
    until: null,
    category: 'A',
    policy: 'a.api-key',
    scope: 'a',
    guard: null,
  };
  it('changes a rate limit’s numbers, leaves a limit of the other kind alone', () => {
    expect(overridden(rate, { count: 3, perSeconds: null })).toMatchObject({ count: 3, perSeconds: 60 });
    expect(overridden(rate, { count: 3, perSeconds: 10 })).toMatchObject({ count: 3, perSeconds: 10 });
    expect(overridden(rate, { concurrent: 3 })).toBe(rate);
    const slots: Limit = { ...rate, count: 2, perSeconds: 0, until: 'response' };
    expect(overridden(slots, { concurrent: 7 })).toMatchObject({ count: 7, until: 'response' });
    expect(overridden(slots, { count: 7, perSeconds: null })).toBe(slots);
  });
});

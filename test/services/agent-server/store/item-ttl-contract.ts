import { describe, expect, it } from 'vitest';
import {
  valueBytes,
  type CountedItemStore,
  type ItemLimits,
} from '../../../../src/services/agent-server/store/item-quota.ts';

/**
 * Store item TTLs (issue 27, item 2) on a CountedItemStore (memory, Redis and PostgreSQL alike), on a clock the test moves: an
 * item expires `ttl` minutes after its put or its last refreshed read, is invisible from then on, and its counts go
 * with it.
 */
const NONE: ItemLimits = { items: Infinity, bytes: Infinity, userItems: Infinity, userBytes: Infinity };
const MINUTE = 60_000;

export function itemTtlContract(
  name: string,
  make: (now: () => number) => CountedItemStore | Promise<CountedItemStore>,
): void {
  describe(`item TTLs: ${name}`, () => {
    const clocked = async () => {
      const clock = { t: Date.UTC(2026, 0, 1) };
      return { clock, store: await make(() => clock.t) };
    };

    it('an item put with a ttl is gone once it runs out: not read, not searched, not listed, not counted', async () => {
      const { clock, store } = await clocked();
      const v = { text: 'soon gone' };
      expect(await store.putWithin(['t', 'a'], 'brief', v, 'alice', NONE, 1)).toBeNull();
      expect(await store.putWithin(['t', 'b'], 'kept', { n: 1 }, 'alice', NONE)).toBeNull();
      clock.t += MINUTE - 1;
      expect((await store.get(['t', 'a'], 'brief'))?.value).toEqual(v);
      clock.t += 1;
      expect(await store.get(['t', 'a'], 'brief')).toBeNull();
      expect((await store.search(['t'])).map((i) => i.key)).toEqual(['kept']);
      expect(await store.listNamespaces({ prefix: ['t'] })).toEqual([['t', 'b']]);
      expect(await store.usage()).toEqual({ items: 1, bytes: valueBytes({ n: 1 }) });
      expect(await store.usage('alice')).toEqual({ items: 1, bytes: valueBytes({ n: 1 }) });
    });

    it('a sweep removes expired items without a read, and frees their quota', async () => {
      const { clock, store } = await clocked();
      const limits = { ...NONE, items: 2 };
      await store.putWithin(['q'], 'a', { n: 1 }, null, limits, 0.5);
      await store.putWithin(['q'], 'b', { n: 2 }, null, limits, 0.5);
      expect((await store.putWithin(['q'], 'c', { n: 3 }, null, limits))?.limit).toBe('store_items');
      clock.t += MINUTE / 2;
      expect(await store.sweep()).toBe(2);
      expect(await store.sweep()).toBe(0);
      expect(await store.putWithin(['q'], 'c', { n: 3 }, null, limits)).toBeNull();
      expect(await store.usage()).toEqual({ items: 1, bytes: valueBytes({ n: 3 }) });
    });

    it('a refreshed read starts the ttl again; a put without ttl (or a graph put) makes the item last', async () => {
      const { clock, store } = await clocked();
      await store.putWithin(['r'], 'read', { n: 1 }, null, NONE, 1);
      await store.putWithin(['r'], 'replaced', { n: 1 }, null, NONE, 1);
      await store.putWithin(['r'], 'graph', { n: 1 }, null, NONE, 1);
      clock.t += 0.75 * MINUTE;
      await store.refreshTtl([
        { namespace: ['r'], key: 'read' },
        { namespace: ['r'], key: 'never' },
      ]);
      await store.putWithin(['r'], 'replaced', { n: 2 }, null, NONE);
      await store.put(['r'], 'graph', { n: 2 });
      clock.t += 0.75 * MINUTE;
      expect((await store.search(['r'])).map((i) => i.key).sort()).toEqual(['graph', 'read', 'replaced']);
      clock.t += 0.25 * MINUTE;
      expect((await store.search(['r'])).map((i) => i.key).sort()).toEqual(['graph', 'replaced']);
      clock.t += 100 * MINUTE;
      expect(await store.sweep()).toBe(0);
      expect((await store.usage()).items).toBe(2);
    });

    it('an expired item is not brought back by a refresh, and a new put of it starts afresh', async () => {
      const { clock, store } = await clocked();
      await store.putWithin(['e'], 'k', { n: 1 }, 'bob', NONE, 1);
      clock.t += MINUTE;
      await store.refreshTtl([{ namespace: ['e'], key: 'k' }]);
      expect(await store.get(['e'], 'k')).toBeNull();
      expect(await store.putWithin(['e'], 'k', { n: 2 }, 'bob', NONE, 1)).toBeNull();
      expect((await store.get(['e'], 'k'))?.value).toEqual({ n: 2 });
      expect(await store.usage('bob')).toEqual({ items: 1, bytes: valueBytes({ n: 2 }) });
    });
  });
}

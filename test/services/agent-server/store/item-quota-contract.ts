import { describe, expect, it } from 'vitest';
import {
  valueBytes,
  type CountedItemStore,
  type ItemLimits,
} from '../../../../src/services/agent-server/store/item-quota.ts';

/**
 * The counts of a CountedItemStore (memory, Redis, PostgreSQL): kept with every put and delete, a graph's as much as a
 * client's, and checked in the same step as the write.
 */
const NONE: ItemLimits = { items: Infinity, bytes: Infinity, userItems: Infinity, userBytes: Infinity };

export function itemQuotaContract(
  name: string,
  make: () => CountedItemStore | Promise<CountedItemStore>,
  /** A second store on the same storage (another server), when the backend has one. */
  peerOf?: (store: CountedItemStore) => CountedItemStore | Promise<CountedItemStore>,
): void {
  describe(`CountedItemStore: ${name}`, () => {
    it('counts puts, replacements and deletes, through putWithin and through the BaseStore calls graphs use', async () => {
      const store = await make();
      const v = { text: 'hello' };
      expect(await store.putWithin(['a'], 'k1', v, 'alice', NONE)).toBeNull();
      await store.put(['a'], 'k2', { n: 1 });
      expect(await store.usage()).toEqual({ items: 2, bytes: valueBytes(v) + valueBytes({ n: 1 }) });
      expect(await store.usage('alice')).toEqual({ items: 1, bytes: valueBytes(v) });
      // Replaced by another writer: the item is theirs now.
      expect(await store.putWithin(['a'], 'k1', { text: 'hi' }, 'bob', NONE)).toBeNull();
      expect(await store.usage('alice')).toEqual({ items: 0, bytes: 0 });
      expect(await store.usage('bob')).toEqual({ items: 1, bytes: valueBytes({ text: 'hi' }) });
      expect((await store.usage()).items).toBe(2);
      await store.delete(['a'], 'k1');
      await store.delete(['a'], 'k1');
      await store.delete(['a'], 'never');
      expect(await store.usage('bob')).toEqual({ items: 0, bytes: 0 });
      expect(await store.usage()).toEqual({ items: 1, bytes: valueBytes({ n: 1 }) });
      await store.batch([{ namespace: ['a'], key: 'k2', value: null }]);
      expect(await store.usage()).toEqual({ items: 0, bytes: 0 });
    });

    it('a put past a limit writes nothing and says which; one that grows nothing passes; a delete frees', async () => {
      const store = await make();
      const limits: ItemLimits = { items: 3, bytes: 1000, userItems: 2, userBytes: 100 };
      expect(await store.putWithin(['u'], 'a', { s: 'x'.repeat(30) }, 'alice', limits)).toBeNull();
      expect(await store.putWithin(['u'], 'b', { s: 'x'.repeat(30) }, 'alice', limits)).toBeNull();
      expect(await store.putWithin(['u'], 'c', { s: 'x' }, 'alice', limits)).toEqual({
        limit: 'store_items_per_user',
        used: 2,
        max: 2,
      });
      expect(await store.get(['u'], 'c')).toBeNull();
      // Alice's bytes: replacing `a` by something larger goes past 100 bytes.
      expect(await store.putWithin(['u'], 'a', { s: 'x'.repeat(80) }, 'alice', limits)).toMatchObject({
        limit: 'store_bytes_per_user',
        max: 100,
      });
      expect((await store.get(['u'], 'a'))?.value).toEqual({ s: 'x'.repeat(30) });
      // Replacing by something no larger always passes.
      expect(await store.putWithin(['u'], 'a', { s: 'y'.repeat(30) }, 'alice', limits)).toBeNull();
      expect(await store.putWithin(['u'], 'c', { s: 'x' }, 'bob', limits)).toBeNull();
      expect(await store.putWithin(['u'], 'd', { s: 'x' }, 'bob', limits)).toEqual({
        limit: 'store_items',
        used: 3,
        max: 3,
      });
      expect(await store.putWithin(['u'], 'd', { s: 'x' }, null, limits)).toMatchObject({ limit: 'store_items' });
      await store.delete(['u'], 'b');
      expect(await store.putWithin(['u'], 'c', { s: 'x' }, 'alice', limits)).toBeNull();
      expect(await store.usage('alice')).toMatchObject({ items: 2 });
      expect(await store.usage('bob')).toMatchObject({ items: 0 });
      expect(await store.putWithin(['u'], 'big', { s: 'x'.repeat(2000) }, null, limits)).toMatchObject({
        limit: 'store_bytes',
        max: 1000,
      });
    });

    it('refuses a namespace the store refuses, and counts nothing for it', async () => {
      const store = await make();
      await expect(store.putWithin(['a:b'], 'k', { v: 1 }, null, NONE)).rejects.toThrow(/colon/i);
      await expect(store.putWithin(['langgraph'], 'k', { v: 1 }, null, NONE)).rejects.toThrow(/langgraph/);
      expect(await store.usage()).toEqual({ items: 0, bytes: 0 });
    });

    it('concurrent puts at the limit (from two servers on one storage): exactly the limit is stored', async () => {
      const store = await make();
      const peer = (await peerOf?.(store)) ?? store;
      const limits: ItemLimits = { ...NONE, items: 5 };
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => [store, peer][i % 2]!.putWithin(['r'], `k${i}`, { i }, 'u', limits)),
      );
      expect(answers.filter((a) => a === null)).toHaveLength(5);
      expect(await store.usage()).toMatchObject({ items: 5 });
      expect(await store.search(['r'], { limit: 100 })).toHaveLength(5);
    });
  });
}

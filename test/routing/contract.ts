import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeploymentRoute, RouteTable } from '../../src/routing/route-table.ts';

/** The RouteTable contract, run by the memory and the Redis table. */
export interface RouteTableHarness {
  readonly table: RouteTable;
  /** Resolves once `table` has read its store (at once in memory). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export const route = (deploymentId: string, target: string, revisionId = 'rev-1'): DeploymentRoute => ({
  deploymentId,
  revisionId,
  tenantId: 'acme',
  target,
});

export function routeTableContract(name: string, make: () => Promise<RouteTableHarness>): void {
  describe(`RouteTable contract: ${name}`, () => {
    let h: RouteTableHarness;
    beforeEach(async () => {
      h = await make();
      await h.ready();
    });
    afterEach(async () => {
      await h.close();
    });

    it('starts empty: an unknown deployment has no route', () => {
      expect(h.table.get('d-unknown')).toBeUndefined();
      expect(h.table.all()).toEqual([]);
    });

    it('a set route is read back at once (synchronously), with every field', async () => {
      await h.table.set(route('d-1', 'http://127.0.0.1:41001'));
      expect(h.table.get('d-1')).toEqual(route('d-1', 'http://127.0.0.1:41001'));
      expect(h.table.get('d-2')).toBeUndefined();
    });

    it('a rollover replaces the target and revision; the other deployments keep theirs', async () => {
      await h.table.set(route('d-1', 'http://127.0.0.1:41001', 'rev-1'));
      await h.table.set(route('d-2', 'http://127.0.0.1:41002', 'rev-a'));
      await h.table.set(route('d-1', 'http://127.0.0.1:41003', 'rev-2'));
      expect(h.table.get('d-1')).toEqual(route('d-1', 'http://127.0.0.1:41003', 'rev-2'));
      expect(h.table.get('d-2')).toEqual(route('d-2', 'http://127.0.0.1:41002', 'rev-a'));
      expect(
        h.table
          .all()
          .map((r) => r.deploymentId)
          .sort(),
      ).toEqual(['d-1', 'd-2']);
    });

    it('a deleted deployment has no route; deleting an unknown one is no error', async () => {
      await h.table.set(route('d-1', 'http://127.0.0.1:41001'));
      await h.table.delete('d-1');
      await h.table.delete('d-never');
      expect(h.table.get('d-1')).toBeUndefined();
      expect(h.table.all()).toEqual([]);
    });

    it('keeps only the route fields of what it is given', async () => {
      await h.table.set({ ...route('d-1', 'http://127.0.0.1:41001'), extra: 'x' } as DeploymentRoute);
      const read = h.table.get('d-1');
      expect(read?.target).toBe('http://127.0.0.1:41001');
      expect(Object.keys(read ?? {}).sort()).toEqual(['deploymentId', 'revisionId', 'target', 'tenantId']);
    });
  });
}

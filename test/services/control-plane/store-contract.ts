import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Region } from '../../../src/region.ts';
import { moveRevision, queuedRevision } from '../../../src/services/control-plane/revision-state.ts';
import type { ControlPlaneStore } from '../../../src/services/control-plane/store.ts';
import type { StoredDeployment, StoredRevision } from '../../../src/services/control-plane/types.ts';

/**
 * The ControlPlaneStore contract, run by the memory and the Redis store
 * (like the limiter contract): the same calls, the same answers.
 */
export interface StoreHarness {
  /** A store of region `us`. */
  readonly store: ControlPlaneStore;
  /** A store of the same region on the same storage (another process), when the backend has one. */
  readonly peer?: ControlPlaneStore;
  close(): Promise<void>;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');
let clock = 0;
const at = () => new Date(T0 + ++clock * 1000);

export function deploymentRecord(overrides: Partial<StoredDeployment> = {}, region: Region = 'us'): StoredDeployment {
  const now = at().toISOString();
  return {
    id: randomUUID(),
    name: `app-${randomUUID().slice(0, 6)}`,
    tenant_id: 'ws-a',
    region,
    source: 'github',
    source_config: {
      integration_id: null,
      repo_url: 'file:///repo',
      deployment_type: 'dev',
      build_on_push: false,
      custom_url: null,
      resource_spec: null,
    },
    source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json', image_uri: null },
    secrets: [{ name: 'K', ciphertext: 'v1.x.y.z.w' }],
    created_at: now,
    updated_at: now,
    status: 'AWAITING_DATABASE',
    latest_revision_id: '',
    active_revision_id: null,
    image_version: null,
    revision_count: 1,
    ...overrides,
  };
}

export function revisionRecord(
  d: StoredDeployment,
  seq: number,
  overrides: Partial<StoredRevision> = {},
): StoredRevision {
  return { ...queuedRevision(d, seq, at().toISOString()), ...overrides };
}

const ALL = { limit: 100, offset: 0 };

export function storeContract(name: string, make: () => Promise<StoreHarness>): void {
  describe(`ControlPlaneStore contract: ${name}`, () => {
    let h: StoreHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.close();
    });

    /** A deployment with its first revision, stored. */
    const create = async (overrides: Partial<StoredDeployment> = {}) => {
      const d0 = deploymentRecord(overrides);
      const first = revisionRecord(d0, 1);
      const d = { ...d0, latest_revision_id: first.id };
      await h.store.createDeployment(d, first);
      return { d, first };
    };

    it('stores a deployment with its first revision and reads both back equal', async () => {
      const { d, first } = await create();
      expect(h.store.region).toBe('us');
      expect(await h.store.getDeployment('ws-a', d.id)).toEqual(d);
      expect(await h.store.getRevision(d.id, first.id)).toEqual(first);
      expect(await h.store.listRevisions(d.id, undefined, ALL)).toEqual([first]);
    });

    it('a deployment is only found by its own tenant', async () => {
      const { d, first } = await create();
      expect(await h.store.getDeployment('ws-b', d.id)).toBeNull();
      expect(await h.store.listDeployments('ws-b', {}, ALL)).toEqual([]);
      expect(
        await h.store.updateDeployment('ws-b', d.id, (c) => ({ deployment: { ...c, name: 'stolen' } })),
      ).toBeNull();
      expect(await h.store.deleteDeployment('ws-b', d.id)).toBeNull();
      expect((await h.store.getDeployment('ws-a', d.id))?.name).toBe(d.name);
      expect(await h.store.getRevision(d.id, first.id)).not.toBeNull();
    });

    it('unknown ids answer null', async () => {
      expect(await h.store.getDeployment('ws-a', randomUUID())).toBeNull();
      expect(await h.store.getRevision(randomUUID(), randomUUID())).toBeNull();
      expect(await h.store.listRevisions(randomUUID(), undefined, ALL)).toEqual([]);
      expect(await h.store.updateRevision(randomUUID(), randomUUID(), (r) => r)).toBeNull();
    });

    it('refuses a record of another region', async () => {
      const d = deploymentRecord({}, 'eu');
      await expect(h.store.createDeployment(d, revisionRecord(d, 1))).rejects.toThrow(/region eu/);
      expect(await h.store.getDeployment('ws-a', d.id)).toBeNull();
    });

    it('lists a tenant’s deployments newest first, filtered, then paged', async () => {
      const tenant = `ws-${randomUUID().slice(0, 8)}`;
      const a = (await create({ tenant_id: tenant, name: 'alpha-api' })).d;
      const b = (await create({ tenant_id: tenant, name: 'beta', status: 'READY' })).d;
      const c = (
        await create({
          tenant_id: tenant,
          name: 'ALPHA-worker',
          source_config: { ...a.source_config, deployment_type: 'prod' },
        })
      ).d;
      const ids = (list: StoredDeployment[]) => list.map((d) => d.id);
      expect(ids(await h.store.listDeployments(tenant, {}, ALL))).toEqual([c.id, b.id, a.id]);
      expect(ids(await h.store.listDeployments(tenant, {}, { limit: 2, offset: 0 }))).toEqual([c.id, b.id]);
      expect(ids(await h.store.listDeployments(tenant, {}, { limit: 2, offset: 2 }))).toEqual([a.id]);
      expect(ids(await h.store.listDeployments(tenant, { nameContains: 'alpha' }, ALL))).toEqual([c.id, a.id]);
      expect(ids(await h.store.listDeployments(tenant, { statuses: ['READY'] }, ALL))).toEqual([b.id]);
      expect(ids(await h.store.listDeployments(tenant, { deploymentTypes: ['prod'] }, ALL))).toEqual([c.id]);
      expect(ids(await h.store.listDeployments(tenant, { ids: [a.id, b.id] }, ALL))).toEqual([b.id, a.id]);
      expect(
        ids(await h.store.listDeployments(tenant, { nameContains: 'alpha', deploymentTypes: ['dev'] }, ALL)),
      ).toEqual([a.id]);
    });

    it('updateDeployment applies the change; null writes nothing; a revision added with it is stored too', async () => {
      const { d, first } = await create();
      const renamed = await h.store.updateDeployment('ws-a', d.id, (c) => ({ deployment: { ...c, status: 'READY' } }));
      expect(renamed?.deployment.status).toBe('READY');
      expect((await h.store.getDeployment('ws-a', d.id))?.status).toBe('READY');

      expect(await h.store.updateDeployment('ws-a', d.id, () => null)).toEqual({
        deployment: { ...d, status: 'READY' },
      });

      let second: StoredRevision | undefined;
      await h.store.updateDeployment('ws-a', d.id, (c) => {
        second = revisionRecord(c, c.revision_count + 1);
        return {
          deployment: { ...c, latest_revision_id: second.id, revision_count: c.revision_count + 1 },
          revision: second,
        };
      });
      expect((await h.store.getDeployment('ws-a', d.id))?.latest_revision_id).toBe(second!.id);
      expect((await h.store.listRevisions(d.id, undefined, ALL)).map((r) => r.id)).toEqual([second!.id, first.id]);
    });

    it('an error thrown by the change passes through and nothing is written', async () => {
      const { d } = await create();
      await expect(
        h.store.updateDeployment('ws-a', d.id, () => {
          throw new Error('refused by the caller');
        }),
      ).rejects.toThrow('refused by the caller');
      expect(await h.store.getDeployment('ws-a', d.id)).toEqual(d);
    });

    it('revisions list newest first by sequence, filter by status, and page', async () => {
      const { d, first } = await create();
      let cur = d;
      const revs = [first];
      for (let seq = 2; seq <= 4; seq++) {
        const r = revisionRecord(cur, seq, seq === 3 ? { status: 'BUILD_FAILED' } : {});
        cur = { ...cur, latest_revision_id: r.id, revision_count: seq };
        await h.store.updateDeployment('ws-a', d.id, () => ({ deployment: cur, revision: r }));
        revs.push(r);
      }
      const ids = (list: StoredRevision[]) => list.map((r) => r.id);
      expect(ids(await h.store.listRevisions(d.id, undefined, ALL))).toEqual([
        revs[3]!.id,
        revs[2]!.id,
        revs[1]!.id,
        revs[0]!.id,
      ]);
      expect(ids(await h.store.listRevisions(d.id, undefined, { limit: 2, offset: 1 }))).toEqual([
        revs[2]!.id,
        revs[1]!.id,
      ]);
      expect(ids(await h.store.listRevisions(d.id, ['BUILD_FAILED'], ALL))).toEqual([revs[2]!.id]);
      expect(ids(await h.store.listRevisions(d.id, ['QUEUED'], { limit: 1, offset: 1 }))).toEqual([revs[1]!.id]);
      expect(ids(await h.store.listRevisions(d.id, ['QUEUED', 'BUILD_FAILED'], ALL))).toHaveLength(4);
    });

    it('updateRevision moves a revision; a declined change answers null and writes nothing', async () => {
      const { d, first } = await create();
      const moved = await h.store.updateRevision(d.id, first.id, (r) => moveRevision(r, 'AWAITING_BUILD', at()));
      expect(moved?.status).toBe('AWAITING_BUILD');
      expect((await h.store.getRevision(d.id, first.id))?.status_history.map((s) => s.status)).toEqual([
        'QUEUED',
        'AWAITING_BUILD',
      ]);
      expect(await h.store.updateRevision(d.id, first.id, () => null)).toBeNull();
      expect((await h.store.getRevision(d.id, first.id))?.status).toBe('AWAITING_BUILD');
    });

    it('unfinished revisions are those not in a final status', async () => {
      const a = await create();
      const b = await create();
      await h.store.updateRevision(b.d.id, b.first.id, (r) =>
        moveRevision(moveRevision(r, 'AWAITING_BUILD', at()), 'BUILD_FAILED', at(), 'x'),
      );
      const unfinished = (await h.store.unfinishedRevisions()).map((r) => r.id);
      expect(unfinished).toContain(a.first.id);
      expect(unfinished).not.toContain(b.first.id);
    });

    it('delete removes the deployment and all its revisions, once', async () => {
      const { d, first } = await create();
      expect((await h.store.deleteDeployment('ws-a', d.id))?.id).toBe(d.id);
      expect(await h.store.getDeployment('ws-a', d.id)).toBeNull();
      expect(await h.store.getRevision(d.id, first.id)).toBeNull();
      expect(await h.store.listRevisions(d.id, undefined, ALL)).toEqual([]);
      expect((await h.store.unfinishedRevisions()).map((r) => r.id)).not.toContain(first.id);
      expect(await h.store.deleteDeployment('ws-a', d.id)).toBeNull();
      // A late write of a running build does not bring the revision back.
      expect(await h.store.updateRevision(d.id, first.id, (r) => moveRevision(r, 'AWAITING_BUILD', at()))).toBeNull();
      expect(await h.store.getRevision(d.id, first.id)).toBeNull();
    });

    it('records handed out cannot change the store', async () => {
      const { d } = await create();
      const got = (await h.store.getDeployment('ws-a', d.id)) as { name: string };
      try {
        got.name = 'mutated';
      } catch {
        // frozen: fine
      }
      expect((await h.store.getDeployment('ws-a', d.id))?.name).toBe(d.name);
    });

    it('concurrent updates of one record all apply (none is lost)', async () => {
      const { d } = await create({ revision_count: 0 });
      const stores = [h.store, h.peer ?? h.store];
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          stores[i % 2]!.updateDeployment('ws-a', d.id, (c) => ({
            deployment: { ...c, revision_count: c.revision_count + 1 },
          })),
        ),
      );
      expect((await h.store.getDeployment('ws-a', d.id))?.revision_count).toBe(20);
    });

    it('a tenant at maxPerTenant: create answers false and stores nothing; a delete frees the slot', async () => {
      const tenant = `ws-${randomUUID().slice(0, 8)}`;
      const make = () => {
        const d0 = deploymentRecord({ tenant_id: tenant });
        const first = revisionRecord(d0, 1);
        return { d: { ...d0, latest_revision_id: first.id }, first };
      };
      const a = make();
      const b = make();
      expect(await h.store.createDeployment(a.d, a.first, 2)).toBe(true);
      expect(await h.store.createDeployment(b.d, b.first, 2)).toBe(true);
      const c = make();
      expect(await h.store.createDeployment(c.d, c.first, 2)).toBe(false);
      expect(await h.store.getDeployment(tenant, c.d.id)).toBeNull();
      expect(await h.store.getRevision(c.d.id, c.first.id)).toBeNull();
      expect((await h.store.unfinishedRevisions()).map((r) => r.id)).not.toContain(c.first.id);
      // Another tenant is not counted with this one.
      const other = deploymentRecord({ tenant_id: `${tenant}-other` });
      expect(await h.store.createDeployment(other, revisionRecord(other, 1), 2)).toBe(true);
      await h.store.deleteDeployment(tenant, a.d.id);
      expect(await h.store.createDeployment(c.d, c.first, 2)).toBe(true);
      expect((await h.store.listDeployments(tenant, {}, ALL)).map((d) => d.id).sort()).toEqual([b.d.id, c.d.id].sort());
    });

    it('concurrent creates at the limit (from two instances): exactly maxPerTenant succeed', async () => {
      const tenant = `ws-${randomUUID().slice(0, 8)}`;
      const stores = [h.store, h.peer ?? h.store];
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => {
          const d0 = deploymentRecord({ tenant_id: tenant });
          const first = revisionRecord(d0, 1);
          return stores[i % 2]!.createDeployment({ ...d0, latest_revision_id: first.id }, first, 5);
        }),
      );
      expect(answers.filter((ok) => ok)).toHaveLength(5);
      expect(await h.store.listDeployments(tenant, {}, ALL)).toHaveLength(5);
    });

    it('a peer on the same storage reads what this one wrote', async () => {
      if (!h.peer) return;
      const { d, first } = await create();
      expect(await h.peer.getDeployment('ws-a', d.id)).toEqual(d);
      expect(await h.peer.getRevision(d.id, first.id)).toEqual(first);
    });
  });
}

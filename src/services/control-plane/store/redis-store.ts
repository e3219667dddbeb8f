import { jsonErrorPosition } from '../../shared/json-error-position.ts';
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { Region } from '../../../region.ts';
import { StoreUnavailable } from '../errors.ts';
import { isTerminal } from '../revision-state.ts';
import {
  checkOwnership,
  matchesFilter,
  pageOf,
  type ControlPlaneStore,
  type DeploymentChange,
  type DeploymentFilter,
  type Page,
} from '../store.ts';
import type { RevisionStatus, StoredDeployment, StoredRevision } from '../types.ts';
import { closeRedis } from '../../../redis-client.ts';

/**
 * The store in Redis. Every key of a region sits under `<prefix>:<region>:`,
 * so one Redis can hold several regions side by side and an instance only
 * ever reads its own region's keys (and checks the `region` of what it reads):
 *
 *   dep:<id>              JSON deployment
 *   tenant:<tenant>       sorted set of the tenant's deployment ids by creation sequence
 *   seq                   counter giving that sequence
 *   rev:<dep>:<rev>       JSON revision
 *   revs:<dep>            sorted set of the deployment's revision ids by `seq`
 *   unfinished            set of `<dep>/<rev>` not yet in a final status
 *
 * Writes are optimistic: read, change, then cas.lua applies the new value
 * and its index changes only if the record is still what was read.
 */
const CAS_LUA = readFileSync(new URL('./cas.lua', import.meta.url), 'utf8');
const MAX_ATTEMPTS = 20;

type Op = [string, number, ...(string | number)[]];
type Cas = (numKeys: number, ...args: string[]) => Promise<number>;

export interface RedisStoreOptions {
  readonly prefix?: string;
  /** Whether `close()` quits the client. Off when the client is shared. */
  readonly ownsClient?: boolean;
}

export class RedisControlPlaneStore implements ControlPlaneStore {
  readonly kind = 'redis';
  private readonly base: string;
  private readonly ownsClient: boolean;
  private readonly cas: Cas;

  constructor(
    private readonly client: Redis,
    readonly region: Region,
    { prefix = 'cp', ownsClient = false }: RedisStoreOptions = {},
  ) {
    this.base = `${prefix}:${region}:`;
    this.ownsClient = ownsClient;
    client.defineCommand('controlPlaneCas', { lua: CAS_LUA });
    this.cas = (client as unknown as { controlPlaneCas: Cas }).controlPlaneCas.bind(client);
  }

  async createDeployment(d: StoredDeployment, first: StoredRevision, maxPerTenant = Infinity): Promise<boolean> {
    checkOwnership(this.region, d, 'deployment');
    checkOwnership(this.region, first, 'revision');
    return this.guard(async () => {
      const seq = await this.client.incr(this.k('seq'));
      const keys = [this.k(`dep:${d.id}`), this.k(`tenant:${d.tenant_id}`), ...this.revisionKeys(first)];
      // The tenant's index counted in the same script that adds to it: two creates at the limit cannot both pass.
      const ops: Op[] = Number.isFinite(maxPerTenant) ? [['zcard-below', 2, maxPerTenant]] : [];
      ops.push(['zadd', 2, seq, d.id], ...this.revisionOps(first, 3));
      const applied = await this.run(keys, '', JSON.stringify(d), ops);
      if (applied === 0) throw new Error(`deployment ${d.id} exists`);
      return applied === 1;
    });
  }

  async getDeployment(tenantId: string, id: string): Promise<StoredDeployment | null> {
    const d = await this.guard(() => this.readDeployment(id));
    return d !== null && d.tenant_id === tenantId ? d : null;
  }

  async listDeployments(tenantId: string, filter: DeploymentFilter, page: Page): Promise<StoredDeployment[]> {
    return this.guard(async () => {
      const ids = await this.client.zrevrange(this.k(`tenant:${tenantId}`), 0, -1);
      if (ids.length === 0) return [];
      const raws = await this.client.mget(ids.map((id) => this.k(`dep:${id}`)));
      const all = raws
        .map((raw) => this.parse<StoredDeployment>(raw))
        .filter((d): d is StoredDeployment => d !== null && d.tenant_id === tenantId);
      return pageOf(
        all.filter((d) => matchesFilter(d, filter)),
        page,
      );
    });
  }

  async updateDeployment(
    tenantId: string,
    id: string,
    change: (current: StoredDeployment) => DeploymentChange | null,
  ): Promise<DeploymentChange | null> {
    const key = this.k(`dep:${id}`);
    return this.retry(async () => {
      const raw = await this.client.get(key);
      const current = this.parse<StoredDeployment>(raw);
      if (current === null || current.tenant_id !== tenantId) return { done: true, value: null };
      const next = change(current);
      if (next === null) return { done: true, value: { deployment: current } };
      checkOwnership(this.region, next.deployment, 'deployment');
      const keys = [key];
      const ops: Op[] = [];
      if (next.revision) {
        checkOwnership(this.region, next.revision, 'revision');
        keys.push(...this.revisionKeys(next.revision));
        ops.push(...this.revisionOps(next.revision, 2));
      }
      return { done: await this.apply(keys, raw!, JSON.stringify(next.deployment), ops), value: next };
    });
  }

  async deleteDeployment(tenantId: string, id: string): Promise<StoredDeployment | null> {
    const key = this.k(`dep:${id}`);
    return this.retry(async () => {
      const raw = await this.client.get(key);
      const current = this.parse<StoredDeployment>(raw);
      if (current === null || current.tenant_id !== tenantId) return { done: true, value: null };
      const revIds = await this.client.zrange(this.k(`revs:${id}`), 0, -1);
      const keys = [key, this.k(`tenant:${tenantId}`), this.k(`revs:${id}`), this.k('unfinished')];
      const ops: Op[] = [
        ['zrem', 2, id],
        ['del', 3],
      ];
      for (const rev of revIds) {
        keys.push(this.k(`rev:${id}:${rev}`));
        ops.push(['del', keys.length], ['srem', 4, `${id}/${rev}`]);
      }
      return { done: await this.apply(keys, raw!, '', ops), value: current };
    });
  }

  async getRevision(deploymentId: string, revisionId: string): Promise<StoredRevision | null> {
    return this.guard(async () =>
      this.parse<StoredRevision>(await this.client.get(this.k(`rev:${deploymentId}:${revisionId}`))),
    );
  }

  async listRevisions(
    deploymentId: string,
    statuses: readonly RevisionStatus[] | undefined,
    page: Page,
  ): Promise<StoredRevision[]> {
    return this.guard(async () => {
      // Unfiltered, only the page is read; a status filter reads the whole list (a deployment has few revisions).
      const [start, stop] = statuses?.length ? [0, -1] : [page.offset, page.offset + page.limit - 1];
      const ids = await this.client.zrevrange(this.k(`revs:${deploymentId}`), start, stop);
      if (ids.length === 0) return [];
      const raws = await this.client.mget(ids.map((id) => this.k(`rev:${deploymentId}:${id}`)));
      const revs = raws.map((raw) => this.parse<StoredRevision>(raw)).filter((r): r is StoredRevision => r !== null);
      return statuses?.length
        ? pageOf(
            revs.filter((r) => statuses.includes(r.status)),
            page,
          )
        : revs;
    });
  }

  async updateRevision(
    deploymentId: string,
    revisionId: string,
    change: (current: StoredRevision) => StoredRevision | null,
  ): Promise<StoredRevision | null> {
    const key = this.k(`rev:${deploymentId}:${revisionId}`);
    return this.retry(async () => {
      const raw = await this.client.get(key);
      const current = this.parse<StoredRevision>(raw);
      if (current === null) return { done: true, value: null };
      const next = change(current);
      if (next === null) return { done: true, value: null };
      checkOwnership(this.region, next, 'revision');
      const member = `${deploymentId}/${revisionId}`;
      const ops: Op[] = [isTerminal(next.status) ? ['srem', 2, member] : ['sadd', 2, member]];
      return { done: await this.apply([key, this.k('unfinished')], raw!, JSON.stringify(next), ops), value: next };
    });
  }

  async allDeployments(): Promise<StoredDeployment[]> {
    return this.guard(async () => {
      const found: StoredDeployment[] = [];
      const match = `${this.base.replace(/[*?[\]\\]/g, '\\$&')}dep:*`;
      let cursor = '0';
      do {
        const [next, keys] = await this.client.scan(cursor, 'MATCH', match, 'COUNT', 500);
        cursor = next;
        if (keys.length === 0) continue;
        for (const raw of await this.client.mget(keys)) {
          const d = this.parse<StoredDeployment>(raw);
          if (d !== null) found.push(d);
        }
      } while (cursor !== '0');
      return found;
    });
  }

  async unfinishedRevisions(): Promise<StoredRevision[]> {
    return this.guard(async () => {
      const members = await this.client.smembers(this.k('unfinished'));
      if (members.length === 0) return [];
      const raws = await this.client.mget(members.map((m) => this.k(`rev:${m.replace('/', ':')}`)));
      return raws
        .map((raw) => this.parse<StoredRevision>(raw))
        .filter((r): r is StoredRevision => r !== null && !isTerminal(r.status));
    });
  }

  async close(): Promise<void> {
    if (this.ownsClient) await closeRedis(this.client);
  }

  private k(suffix: string): string {
    return this.base + suffix;
  }

  private revisionKeys(r: StoredRevision): string[] {
    return [this.k(`rev:${r.deployment_id}:${r.id}`), this.k(`revs:${r.deployment_id}`), this.k('unfinished')];
  }

  /** Ops storing a revision (new or replaced) whose three keys (revisionKeys) start at KEYS position `at`. */
  private revisionOps(r: StoredRevision, at: number): Op[] {
    const ops: Op[] = [
      ['set', at, JSON.stringify(r)],
      ['zadd', at + 1, r.seq, r.id],
    ];
    ops.push([isTerminal(r.status) ? 'srem' : 'sadd', at + 2, `${r.deployment_id}/${r.id}`]);
    return ops;
  }

  private async apply(keys: string[], expected: string, next: string, ops: Op[]): Promise<boolean> {
    return (await this.run(keys, expected, next, ops)) === 1;
  }

  /** cas.lua's answer: 1 applied, 0 the record changed since it was read, -1 a check op refused. */
  private async run(keys: string[], expected: string, next: string, ops: Op[]): Promise<number> {
    return this.cas(keys.length, ...keys, expected, next, JSON.stringify(ops));
  }

  /** A record of this region, or null (absent, or written by another region's instance). */
  private parse<T extends { region: Region }>(raw: string | null): T | null {
    if (raw === null) return null;
    let record: T;
    try {
      record = JSON.parse(raw) as T;
    } catch {
      // Never the parser's message: it quotes the record.
      throw new Error(`control plane store: a record is not valid JSON (${jsonErrorPosition(raw)})`);
    }
    return record.region === this.region ? record : null;
  }

  private async readDeployment(id: string): Promise<StoredDeployment | null> {
    return this.parse<StoredDeployment>(await this.client.get(this.k(`dep:${id}`)));
  }

  private async retry<T>(attempt: () => Promise<{ done: boolean; value: T }>): Promise<T> {
    return this.guard(async () => {
      for (let i = 0; i < MAX_ATTEMPTS; i++) {
        const { done, value } = await attempt();
        if (done) return value;
      }
      throw new StoreUnavailable(`redis: record still changing after ${MAX_ATTEMPTS} attempts`);
    });
  }

  /** Redis failures become StoreUnavailable (503); errors of the caller's own `change` pass through. */
  private async guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (isRedisError(err)) throw new StoreUnavailable(`redis: ${(err as Error).message}`, { cause: err });
      throw err;
    }
  }
}

export function isRedisError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    ['ReplyError', 'MaxRetriesPerRequestError', 'AbortError'].includes(err.name) ||
    /ECONNREFUSED|ECONNRESET|ETIMEDOUT|Connection is closed|Stream isn't writeable|enableOfflineQueue/i.test(
      err.message,
    )
  );
}

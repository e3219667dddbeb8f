import type { Cluster, Redis } from 'ioredis';
import { createRedisClient, createRedisCluster } from '../redis-client.ts';
import type { Limit } from '../rules/types.ts';
import type { Settings } from '../settings/settings.ts';

/**
 * Plans per organisation (issue 29, item 4): an operator's overrides of the numbers of a rule's or guard's limit, for
 * the requests whose API key belongs to one organisation. Kept in the store: a Redis hash under the gateway's prefix
 * (`<KEY_PREFIX>:overrides`, field `<org>\t<policy>`, value JSON) and a version key every change increments, which
 * each edge process polls (OVERRIDES_POLL_MS) to re-read the hash; in this process's memory without Redis.
 */

/** A rate limit's new count (and period, else the rule's), or an in-flight limit's new number of slots. */
export type Override = { readonly count: number; readonly perSeconds: number | null } | { readonly concurrent: number };

/** One organisation's overrides, by policy (`<rule>.<by>` or `guard.<id>`). */
export type OrgOverrides = Readonly<Record<string, Override>>;

export interface OverrideStore {
  /** Every organisation's overrides. */
  read(): Promise<Map<string, OrgOverrides>>;
  set(org: string, policy: string, override: Override): Promise<void>;
  /** Removes one policy's override of `org`, or all of them; how many were removed. */
  unset(org: string, policy?: string): Promise<number>;
  /** Changes whenever an override does. */
  version(): Promise<string>;
  close(): Promise<void>;
}

/** The limit with an override's numbers; unchanged when the override is of the other kind (rate vs in flight). */
export function overridden(limit: Limit, o: Override): Limit {
  if ('concurrent' in o) return limit.until === null ? limit : { ...limit, count: o.concurrent };
  if (limit.until !== null) return limit;
  return { ...limit, count: o.count, perSeconds: o.perSeconds ?? limit.perSeconds };
}

const SEPARATOR = '\t';

function field(org: string, policy: string): string {
  return `${org}${SEPARATOR}${policy}`;
}

function grouped(entries: Iterable<[string, string]>): Map<string, OrgOverrides> {
  const out = new Map<string, Record<string, Override>>();
  for (const [f, v] of entries) {
    const i = f.indexOf(SEPARATOR);
    if (i <= 0) continue;
    let o: Override;
    try {
      o = JSON.parse(v) as Override;
    } catch {
      continue; // not ours: skipped rather than failing every edge
    }
    const org = f.slice(0, i);
    let set = out.get(org);
    if (set === undefined) out.set(org, (set = {}));
    set[f.slice(i + 1)] = o;
  }
  return out;
}

export class MemoryOverrideStore implements OverrideStore {
  private readonly entries = new Map<string, string>();
  private changes = 0;
  async read() {
    return grouped(this.entries);
  }
  async set(org: string, policy: string, o: Override) {
    this.entries.set(field(org, policy), JSON.stringify(o));
    this.changes++;
  }
  async unset(org: string, policy?: string) {
    let n = 0;
    for (const f of [...this.entries.keys()])
      if (policy === undefined ? f.startsWith(org + SEPARATOR) : f === field(org, policy)) n += +this.entries.delete(f);
    this.changes++;
    return n;
  }
  async version() {
    return String(this.changes);
  }
  async close() {}
}

export class RedisOverrideStore implements OverrideStore {
  private readonly hash: string;
  private readonly versionKey: string;
  constructor(
    private readonly client: Redis | Cluster,
    prefix: string,
    private readonly owned = true,
  ) {
    this.hash = `${prefix}:overrides`;
    this.versionKey = `${prefix}:overrides:version`;
  }
  async read() {
    return grouped(Object.entries(await this.client.hgetall(this.hash)));
  }
  async set(org: string, policy: string, o: Override) {
    await this.client.hset(this.hash, field(org, policy), JSON.stringify(o));
    await this.client.incr(this.versionKey);
  }
  async unset(org: string, policy?: string) {
    const fields =
      policy !== undefined
        ? [field(org, policy)]
        : Object.keys(await this.client.hgetall(this.hash)).filter((f) => f.startsWith(org + SEPARATOR));
    const n = fields.length === 0 ? 0 : await this.client.hdel(this.hash, ...fields);
    await this.client.incr(this.versionKey);
    return n;
  }
  async version() {
    return (await this.client.get(this.versionKey)) ?? '0';
  }
  async close() {
    if (this.owned) this.client.disconnect();
  }
}

/** The store the settings name: the Redis (or Cluster) of the buckets, under KEY_PREFIX; else memory. */
export function overrideStoreFromSettings(
  settings: Pick<Settings, 'redisUrl' | 'redisClusterNodes' | 'keyPrefix'>,
): OverrideStore {
  const options = { retriesPerRequest: 1, onError: () => {} };
  if (settings.redisClusterNodes.length > 0)
    return new RedisOverrideStore(createRedisCluster(settings.redisClusterNodes, options), settings.keyPrefix);
  if (settings.redisUrl !== null)
    return new RedisOverrideStore(createRedisClient(settings.redisUrl, options), settings.keyPrefix);
  return new MemoryOverrideStore();
}

/**
 * The overrides as this process applies them: read at start, then re-read whenever the store's version moves (polled
 * every `pollMs`), so a change reaches every edge and worker within about that, without a reload. A failed poll
 * keeps the last overrides read.
 */
export class LiveOverrides {
  private current = new Map<string, OrgOverrides>();
  private seen: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Moves whenever the overrides in force change (callers key their caches by it). */
  generation = 0;

  constructor(
    readonly store: OverrideStore,
    private readonly pollMs = 500,
  ) {}

  /** Reads them once (bounded by the caller), then polls. */
  async start(): Promise<void> {
    await this.refresh().catch(() => {});
    this.timer = setInterval(() => void this.refresh().catch(() => {}), this.pollMs);
    this.timer.unref();
  }

  /** Re-reads the overrides when the store's version moved (at once after a change made through this process). */
  async refresh(): Promise<void> {
    const v = await this.store.version();
    if (v === this.seen) return;
    const read = await this.store.read();
    this.seen = v;
    this.current = read;
    this.generation++;
  }

  get empty(): boolean {
    return this.current.size === 0;
  }

  of(org: string): OrgOverrides | undefined {
    return this.current.get(org);
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    await this.store.close();
  }
}

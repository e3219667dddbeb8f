import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { closeRedis } from '../redis-client.ts';
import { storedRoute, type DeploymentRoute, type RouteTable } from './route-table.ts';

/**
 * The table in Redis, shared by the control plane (which writes it) and every
 * edge on that Redis (which read it). Keys under `<prefix>:{routes}:` (one
 * hash slot):
 *
 *   table   hash: deployment id → JSON DeploymentRoute
 *   seq     the number of the last change (INCR per write)
 *   epoch   a random id set by the first write: a Redis that lost its data gets a new one
 *
 * Each change is written and published on the channel `<prefix>:{routes}:changes` by one script, so the messages
 * arrive in the order of the writes, each with its number. Every process keeps the whole table in memory (`get()` is
 * synchronous: the edge reads it on every request) and applies the messages in turn. A missed message (a gap in the
 * numbers, a subscription that dropped) is caught by reading the whole hash again: after every (re)subscription, on a
 * gap, and every `resyncMs` when the `seq` in Redis differs from the last one applied (one MGET when nothing changed).
 * While Redis is away the last known table keeps serving, with this process's own changes over it: each applies here
 * before its write and stays applied until written (a failed write is tried again at each check). Fail closed: a
 * route marked down after its process died is never tried again here because Redis was slow or refused the mark.
 */

/**
 * KEYS[1] table, KEYS[2] seq, KEYS[3] epoch.
 * ARGV[1] epoch to set if none yet, ARGV[2] deployment id, ARGV[3] route JSON ('' deletes), ARGV[4] channel.
 * Returns {epoch, seq}.
 */
const WRITE_LUA = `
redis.call('SET', KEYS[3], ARGV[1], 'NX')
local epoch = redis.call('GET', KEYS[3])
local seq = redis.call('INCR', KEYS[2])
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[2]) else redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
redis.call('PUBLISH', ARGV[4], cjson.encode({ e = epoch, s = seq, id = ARGV[2], r = ARGV[3] }))
return { epoch, seq }
`;
const WRITE_COMMAND = 'deploymentRoutesWrite';

type WriteClient = Redis & {
  [WRITE_COMMAND](table: string, seq: string, epoch: string, ...argv: string[]): Promise<[string, number]>;
};

export interface RedisRouteTableOptions {
  /** Prefix of the keys and the channel (default `routes`). */
  readonly prefix?: string;
  /** How often the table checks that it has every change (one MGET; the whole hash only when it has not). */
  readonly resyncMs?: number;
  /** Whether `close()` quits `client` (the subscriber, a duplicate of it, is always closed). */
  readonly ownsClient?: boolean;
  /** A failed resync or an unreadable message (the table keeps its last state and tries again). */
  readonly onError?: (err: Error) => void;
}

interface Change {
  readonly e: string;
  readonly s: number;
  readonly id: string;
  /** The route JSON, '' for a delete. */
  readonly r: string;
}

export class RedisRouteTable implements RouteTable {
  /** Resolves once the whole table has been read the first time (it keeps trying while Redis is away). */
  readonly ready: Promise<void>;
  private readonly routes = new Map<string, DeploymentRoute>();
  /** Changes this process failed to write (deployment id → route JSON, '' = deleted): applied over what Redis says. */
  private readonly unwritten = new Map<string, string>();
  private readonly keys: { table: string; seq: string; epoch: string; channel: string };
  private readonly subscriber: Redis;
  private readonly ownsClient: boolean;
  private readonly onError: (err: Error) => void;
  private readonly timer: NodeJS.Timeout;
  private epoch: string | null = null;
  private seq = 0;
  private resyncing: Promise<void> | null = null;
  private resyncAgain = false;
  private rewriting = false;
  private closed = false;
  private markReady!: () => void;

  constructor(
    private readonly client: Redis,
    { prefix = 'routes', resyncMs = 5000, ownsClient = false, onError = () => {} }: RedisRouteTableOptions = {},
  ) {
    const base = `${prefix}:{routes}`;
    this.keys = { table: `${base}:table`, seq: `${base}:seq`, epoch: `${base}:epoch`, channel: `${base}:changes` };
    this.ownsClient = ownsClient;
    this.onError = onError;
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    client.defineCommand(WRITE_COMMAND, { numberOfKeys: 3, lua: WRITE_LUA });
    // Our own subscription, made again on every connection before the resync: nothing published after the resync's
    // read can be missed. The duplicate keeps the client's error listener options but not its listeners.
    this.subscriber = client.duplicate({
      autoResubscribe: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: null,
    });
    this.subscriber.on('error', (err: Error) => this.onError(err));
    this.subscriber.on('ready', () => void this.subscribe());
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.keys.channel) this.receive(message);
    });
    this.timer = setInterval(() => void this.check(), resyncMs);
    this.timer.unref();
  }

  get(deploymentId: string): DeploymentRoute | undefined {
    return this.routes.get(deploymentId);
  }

  async set(route: DeploymentRoute): Promise<void> {
    await this.write(route.deploymentId, JSON.stringify(storedRoute(route)));
  }

  async delete(deploymentId: string): Promise<void> {
    await this.write(deploymentId, '');
  }

  all(): readonly DeploymentRoute[] {
    return [...this.routes.values()];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.subscriber.disconnect();
    if (this.ownsClient) await closeRedis(this.client);
  }

  /**
   * One change, written and published by one script. It applies here before the write (a route marked down is never
   * tried again here while Redis is slow or refuses the write) and stays applied over what Redis says until written.
   */
  private async write(deploymentId: string, routeJson: string): Promise<void> {
    const { table, seq, epoch, channel } = this.keys;
    this.unwritten.set(deploymentId, routeJson);
    this.setLocal(deploymentId, routeJson);
    const [e, s] = await (this.client as WriteClient)[WRITE_COMMAND](
      table,
      seq,
      epoch,
      randomUUID(),
      deploymentId,
      routeJson,
      channel,
    );
    if (this.unwritten.get(deploymentId) === routeJson) this.unwritten.delete(deploymentId);
    this.apply({ e, s: Number(s), id: deploymentId, r: routeJson });
  }

  /** Writes again what failed to be written (the newest change of each deployment). */
  private async writeUnwritten(): Promise<void> {
    if (this.rewriting) return; // one round at a time: a hung write is not queued again every check
    this.rewriting = true;
    for (const [id, json] of [...this.unwritten]) await this.write(id, json).catch(() => {});
    this.rewriting = false;
  }

  private setLocal(id: string, routeJson: string): void {
    const route = routeJson === '' ? null : parseRoute(routeJson);
    if (route === null) this.routes.delete(id);
    else this.routes.set(id, route);
  }

  private async subscribe(): Promise<void> {
    try {
      await this.subscriber.subscribe(this.keys.channel);
    } catch (err) {
      if (!this.closed) this.onError(err as Error);
      return; // the next 'ready' subscribes again
    }
    await this.resync();
  }

  private receive(message: string): void {
    let change: Change;
    try {
      change = JSON.parse(message) as Change;
      if (typeof change.e !== 'string' || typeof change.s !== 'number' || typeof change.id !== 'string')
        throw new Error('not a route change');
    } catch (err) {
      this.onError(new Error(`unreadable route change (${(err as Error).message}): reading the whole table`));
      void this.resync();
      return;
    }
    this.apply(change);
  }

  /** Applies a change newer than the last one applied; a gap in the numbers (or a new epoch) also reads the table. */
  private apply(change: Change): void {
    if (change.e === this.epoch && change.s <= this.seq) return; // already applied (our own write, or in a resync)
    const gap = change.e !== this.epoch || change.s !== this.seq + 1;
    if (!this.unwritten.has(change.id)) this.setLocal(change.id, change.r);
    this.epoch = change.e;
    this.seq = change.s;
    if (gap) void this.resync();
  }

  /** Cheap check: reads the whole table only when Redis holds a change this process has not applied. */
  private async check(): Promise<void> {
    if (this.closed || this.client.status !== 'ready') return;
    await this.writeUnwritten();
    try {
      const [seq, epoch] = await this.client.mget(this.keys.seq, this.keys.epoch);
      if (epoch !== this.epoch || Number(seq ?? 0) !== this.seq) await this.resync();
    } catch (err) {
      this.onError(err as Error);
    }
  }

  /** Reads the whole table; one read at a time, and one more if asked for meanwhile. */
  private resync(): Promise<void> {
    if (this.resyncing) {
      this.resyncAgain = true;
      return this.resyncing;
    }
    this.resyncing = (async () => {
      do {
        this.resyncAgain = false;
        await this.readTable();
      } while (this.resyncAgain && !this.closed);
      this.resyncing = null;
    })();
    return this.resyncing;
  }

  private async readTable(): Promise<void> {
    if (this.closed) return;
    let result: [Error | null, unknown][] | null;
    try {
      result = await this.client.multi().get(this.keys.epoch).get(this.keys.seq).hgetall(this.keys.table).exec();
    } catch (err) {
      this.onError(err as Error);
      return; // the periodic check or the next subscription tries again
    }
    const failed = result?.find(([err]) => err !== null)?.[0];
    if (!result || failed) {
      this.onError(failed ?? new Error('route table read aborted'));
      return;
    }
    const epoch = result[0]![1] as string | null;
    const seq = Number(result[1]![1] ?? 0);
    const entries = result[2]![1] as Record<string, string>;
    // A change newer than this read has already been applied (its message overtook the read's reply): keep it.
    if (epoch !== null && epoch === this.epoch && seq < this.seq) return;
    this.routes.clear();
    for (const [id, json] of Object.entries(entries)) {
      const route = parseRoute(json);
      if (route) this.routes.set(id, route);
    }
    for (const [id, json] of this.unwritten) this.setLocal(id, json);
    this.epoch = epoch;
    this.seq = seq;
    this.markReady();
  }
}

function parseRoute(json: string): DeploymentRoute | null {
  try {
    const r = JSON.parse(json) as Partial<DeploymentRoute>;
    if (
      typeof r.deploymentId === 'string' &&
      typeof r.revisionId === 'string' &&
      typeof r.tenantId === 'string' &&
      typeof r.target === 'string'
    )
      return storedRoute({
        deploymentId: r.deploymentId,
        revisionId: r.revisionId,
        tenantId: r.tenantId,
        target: r.target,
        ...(r.unavailable === 'starting' || r.unavailable === 'failed' ? { unavailable: r.unavailable } : {}),
      });
  } catch {
    // an entry nobody could have written through this table: skipped
  }
  return null;
}

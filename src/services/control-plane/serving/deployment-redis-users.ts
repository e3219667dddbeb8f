import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { DEFAULT_ORG } from '../../../keys/bootstrap.ts';
import { itemLibrary, loadItemFunctions } from '../../agent-server/store/item-functions.ts';
import { RevisionLoadError } from '../../revision-host/revision-host.ts';
import { deploymentRedisUrl, deploymentUserName, deploymentUserRules } from './redis-acl-rules.ts';

/**
 * The Redis credentials a revision's process gets. With ACLs (Redis 6+, and
 * REDIS_URL's user allowed `ACL SETUSER`), each deployment has a user of its
 * own, limited to its data prefix and the commands its Agent Server sends
 * (redis-acl-rules.ts), with a random password made at each start (the last
 * one is kept in memory only, to make the user again if Redis restarts
 * without it); the user goes with the deployment. Without them, fail closed as
 * the sandbox does: only the gateway's own organisation's revisions get the
 * platform's REDIS_URL, unless TRUST_ALL_TENANTS=1. A Redis whose default user
 * needs no password counts as without: anyone on the host reaches every key
 * anyway, so a user per deployment would protect nothing.
 */
export interface DeploymentRedisUsersOptions {
  /** The control plane's client: its user makes and deletes the deployments' users. */
  readonly redis: Redis;
  /** REDIS_URL: its host, port, db and TLS are the revisions', its credentials never are (with ACLs). */
  readonly platformUrl: string;
  readonly trustAllTenants: boolean;
  readonly log: Logger;
}

export type RedisUsersMode = { readonly kind: 'acl' } | { readonly kind: 'shared'; readonly why: string };

export interface RevisionRedis {
  readonly deploymentId: string;
  /** `<DEPLOYMENT_DATA_PREFIX>:<deployment id>`: the only keys its user reaches. */
  readonly dataPrefix: string;
  readonly org: string | null;
}

/** What the operator changes so that every organisation's deployments run (said at start and to a refused tenant). */
const OPERATOR_FIX =
  'the operator gives Redis\u2019s default user a password (requirepass) and REDIS_URL a user that may run ACL SETUSER (Redis 6 or later), or sets TRUST_ALL_TENANTS=1 (tenants can then read each other\u2019s data)';

/** The one line that refuses another organisation's deployment on a Redis that cannot keep it apart. */
function sharedRefusal(why: string): string {
  return (
    `this gateway's Redis cannot give a deployment credentials of its own (${why}), so it runs only the ` +
    `organisation "${DEFAULT_ORG}"'s deployments; to run others, ${OPERATOR_FIX}`
  );
}

/** How long a deleted deployment's id is remembered, so a start racing the delete cannot make its user again. */
const DELETED_FOR_MS = 10 * 60_000;

export class DeploymentRedisUsers {
  private mode: RedisUsersMode | null = null;
  /** Users made by this process: deployment id → [data prefix, password], made again after a Redis restart. */
  private readonly live = new Map<string, [string, string]>();
  private readonly deleted = new Set<string>();
  /** One change at a time per deployment: a delete never runs between a start's SETUSER and its bookkeeping. */
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly onReady = () => void this.restore();

  private constructor(private readonly o: DeploymentRedisUsersOptions) {}

  /** Finds out (and logs once) which mode applies; when Redis cannot say yet, the first revision start asks again. */
  static async open(o: DeploymentRedisUsersOptions): Promise<DeploymentRedisUsers> {
    const users = new DeploymentRedisUsers(o);
    await users
      .known()
      .catch((err: Error) =>
        o.log.warn({ err: err.message }, 'cannot tell yet whether Redis gives each deployment a user of its own'),
      );
    o.redis.on('ready', users.onReady);
    return users;
  }

  /** The REDIS_URL for a revision's process; a RevisionLoadError when it may not have one. */
  async urlFor(r: RevisionRedis): Promise<string> {
    const mode = await this.known();
    if (mode.kind === 'shared') {
      if (r.org === DEFAULT_ORG || this.o.trustAllTenants) return this.o.platformUrl;
      throw new RevisionLoadError(sharedRefusal(mode.why));
    }
    return this.serially(r.deploymentId, async () => {
      if (this.deleted.has(r.deploymentId)) throw new RevisionLoadError('the deployment is deleted');
      const user = deploymentUserName(r.deploymentId);
      const password = randomBytes(32).toString('hex');
      await this.o.redis.call('ACL', 'SETUSER', user, ...deploymentUserRules(r.dataPrefix, password));
      // Its item store calls functions it may not load itself (no FUNCTION, no EVAL: redis-acl-rules.ts).
      await loadItemFunctions(this.o.redis, itemLibrary().code);
      this.live.set(r.deploymentId, [r.dataPrefix, password]);
      return deploymentRedisUrl(this.o.platformUrl, user, password);
    });
  }

  /** A deleted deployment: its user is gone, and with it every connection made with it. Logs a failure. */
  async remove(deploymentId: string): Promise<void> {
    if (this.mode?.kind !== 'acl') return;
    await this.serially(deploymentId, async () => {
      this.deleted.add(deploymentId);
      setTimeout(() => this.deleted.delete(deploymentId), DELETED_FOR_MS).unref();
      this.live.delete(deploymentId);
      try {
        await this.o.redis.call('ACL', 'DELUSER', deploymentUserName(deploymentId));
      } catch (err) {
        this.o.log.error({ deploymentId, err: (err as Error).message }, 'the deployment\u2019s Redis user stays');
      }
    });
  }

  /**
   * Why a deployment of `org` cannot run on this Redis (one line saying what the operator must change), or null when
   * it can, or when Redis cannot tell yet (the revision's start asks again). The API refuses such a deployment at
   * create, before it is accepted and built.
   */
  async refusalFor(org: string | null): Promise<string | null> {
    if (org === DEFAULT_ORG || this.o.trustAllTenants) return null;
    const mode = await this.known().catch(() => null);
    return mode?.kind === 'shared' ? sharedRefusal(mode.why) : null;
  }

  close(): void {
    this.o.redis.off('ready', this.onReady);
  }

  private async known(): Promise<RedisUsersMode> {
    if (this.mode) return this.mode;
    const mode = await probe(this.o.redis);
    if (this.mode) return this.mode;
    this.mode = mode;
    if (mode.kind === 'acl')
      this.o.log.info({ redis: 'acl' }, 'each deployment reaches Redis as a user of its own, limited to its data');
    else
      this.o.log.warn(
        { redis: 'shared', why: mode.why, trustAllTenants: this.o.trustAllTenants },
        this.o.trustAllTenants
          ? 'deployments reach Redis with the platform\u2019s credentials, and TRUST_ALL_TENANTS=1 runs every organisation: tenants can read each other'
          : `deployments cannot get Redis credentials of their own (${mode.why}): only deployments of the organisation "${DEFAULT_ORG}" are accepted; ${OPERATOR_FIX}`,
      );
    return mode;
  }

  /** After a reconnect: a Redis that restarted without its ACL users gets them back, with the passwords in use. */
  private async restore(): Promise<void> {
    if (this.mode?.kind !== 'acl') return;
    if (this.live.size > 0)
      await loadItemFunctions(this.o.redis, itemLibrary().code).catch((err: Error) =>
        this.o.log.error({ err: err.message }, 'the item store\u2019s functions are not loaded again'),
      );
    for (const [deploymentId, [dataPrefix, password]] of this.live) {
      await this.serially(deploymentId, async () => {
        if (this.live.get(deploymentId)?.[1] !== password) return; // started again or deleted meanwhile
        const rules = deploymentUserRules(dataPrefix, password);
        await this.o.redis.call('ACL', 'SETUSER', deploymentUserName(deploymentId), ...rules);
      }).catch((err: Error) => this.o.log.error({ deploymentId, err: err.message }, 'redis user not restored'));
    }
  }

  private serially<T>(deploymentId: string, job: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(deploymentId) ?? Promise.resolve();
    const next = previous.then(job, job);
    const settled = next.catch(() => {});
    this.queues.set(deploymentId, settled);
    void settled.then(() => this.queues.get(deploymentId) === settled && this.queues.delete(deploymentId));
    return next;
  }
}

/**
 * Whether REDIS_URL's user can make users (a throw-away one, made disabled and deleted), and whether that would
 * protect anything (the default user needs a password). An error other than a refusal (Redis away) is thrown.
 */
async function probe(redis: Redis): Promise<RedisUsersMode> {
  try {
    const entry = (await redis.call('ACL', 'GETUSER', 'default')) as unknown[] | null;
    const flags = entry ? entry[entry.indexOf('flags') + 1] : null;
    if (Array.isArray(flags) && flags.includes('on') && flags.includes('nopass'))
      return { kind: 'shared', why: 'its default user needs no password' };
    const name = `gw-probe-${randomBytes(6).toString('hex')}`;
    await redis.call('ACL', 'SETUSER', name, 'reset', 'off');
    await redis.call('ACL', 'DELUSER', name);
    return { kind: 'acl' };
  } catch (err) {
    const message = (err as Error).message;
    if (/NOPERM|unknown command|unknown subcommand/i.test(message))
      return { kind: 'shared', why: `it refuses ACL: ${message.slice(0, 200)}` };
    throw err;
  }
}

import type { Redis } from 'ioredis';
import { checkName, generateKey, keyHash, newKeyId } from './key-format.ts';
import { byAge, workspaceTaken } from './memory-registry.ts';
import type { ApiKeyRecord, CreatedKey, KeyRegistry } from './types.ts';
import { closeRedis } from '../redis-client.ts';

/**
 * The registry in Redis, shared by every process on that Redis (edge,
 * control plane, `gateway keys create`). Keys under `<prefix>:`:
 *
 *   key:<sha256 of the key>  JSON ApiKeyRecord
 *   ws:<workspace>           owning organisation (claimed with SET NX)
 *   org:<org>:ws             set of the organisation's workspaces
 *   keycount                 number of keys ever created
 *   bootstrapped             set once the development key was made
 *
 * The registry is global, not per region: an organisation's keys work in
 * every region, while its deployments stay in the region that made them.
 */

/** KEYS[1] keycount, KEYS[2] bootstrapped. Claims the bootstrap only while no key exists. */
const CLAIM_BOOTSTRAP = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then return 0 end
if redis.call('SET', KEYS[2], '1', 'NX') then return 1 end
return 0
`;

export interface RedisKeyRegistryOptions {
  readonly prefix?: string;
  /** Whether `close()` quits the client. Off when the client is shared. */
  readonly ownsClient?: boolean;
}

export class RedisKeyRegistry implements KeyRegistry {
  readonly kind = 'redis';
  private readonly prefix: string;
  private readonly ownsClient: boolean;

  constructor(
    private readonly client: Redis,
    { prefix = 'keys', ownsClient = false }: RedisKeyRegistryOptions = {},
  ) {
    this.prefix = prefix;
    this.ownsClient = ownsClient;
  }

  async addWorkspace(org: string, workspace: string): Promise<void> {
    checkName('organisation', org);
    checkName('workspace', workspace);
    const wsKey = this.k(`ws:${workspace}`);
    const claimed = await this.client.set(wsKey, org, 'NX');
    if (claimed === null) {
      const owner = await this.client.get(wsKey);
      if (owner !== org) throw workspaceTaken(workspace);
    }
    await this.client.sadd(this.k(`org:${org}:ws`), workspace);
  }

  async workspaceOrg(workspace: string): Promise<string | null> {
    return this.client.get(this.k(`ws:${workspace}`));
  }

  async workspaces(org: string): Promise<string[]> {
    return (await this.client.smembers(this.k(`org:${org}:ws`))).sort();
  }

  async createKey(org: string): Promise<CreatedKey> {
    checkName('organisation', org);
    const key = generateKey();
    const record: ApiKeyRecord = { id: newKeyId(), org, createdAt: new Date().toISOString() };
    await this.client
      .multi()
      .set(this.k(`key:${keyHash(key)!}`), JSON.stringify(record))
      .incr(this.k('keycount'))
      .exec();
    return { key, record };
  }

  async findKey(key: string): Promise<ApiKeyRecord | null> {
    const hash = keyHash(key);
    if (hash === null) return null;
    const raw = await this.client.get(this.k(`key:${hash}`));
    return raw === null ? null : (JSON.parse(raw) as ApiKeyRecord);
  }

  /** Every record, by a SCAN of `key:*` (a registry of keys people made: thousands at most). */
  async listKeys(org?: string): Promise<ApiKeyRecord[]> {
    const found: ApiKeyRecord[] = [];
    for (const [, record] of await this.records()) if (org === undefined || record.org === org) found.push(record);
    return byAge(found);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord | null> {
    for (const [name, record] of await this.records()) {
      if (record.id !== id) continue;
      // Only while it is still that record (two revokes of one id: one answers it, the other null).
      return (await this.client.del(name)) === 1 ? record : null;
    }
    return null;
  }

  /** Every `key:*` entry with its record (Redis names, records). */
  private async records(): Promise<[string, ApiKeyRecord][]> {
    const names: string[] = [];
    const match = `${this.prefix.replace(/[*?[\]\\]/g, '\\$&')}:key:*`;
    for await (const batch of this.client.scanStream({ match, count: 500 }) as AsyncIterable<string[]>)
      names.push(...batch);
    if (names.length === 0) return [];
    const values = await this.client.mget(names);
    const out: [string, ApiKeyRecord][] = [];
    values.forEach((raw, i) => {
      if (raw !== null) out.push([names[i]!, JSON.parse(raw) as ApiKeyRecord]);
    });
    return out;
  }

  async claimBootstrap(): Promise<boolean> {
    return (await this.client.eval(CLAIM_BOOTSTRAP, 2, this.k('keycount'), this.k('bootstrapped'))) === 1;
  }

  async close(): Promise<void> {
    if (this.ownsClient) await closeRedis(this.client);
  }

  private k(suffix: string): string {
    return `${this.prefix}:${suffix}`;
  }
}

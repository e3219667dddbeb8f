import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisKeyRegistry } from '../../../src/keys/redis-registry.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis, uniquePrefix } from '../../helpers/shared-redis.ts';
import { TEST_SECRETS_KEY, type Tenant } from '../control-plane/helpers.ts';

export interface DeploymentsGateway {
  readonly gw: TestGateway;
  /** An organisation of its own with one workspace and an API key. */
  readonly tenant: Tenant;
  /** Another organisation with a workspace and a key of its own (tests with a tenant next to another). */
  newTenant(): Promise<Tenant>;
  /** BUILD_WORK_DIR: where the revisions are built. */
  readonly workDir: string;
  /** Stops the gateway, removes the builds and every key under this gateway's prefixes. */
  close(): Promise<void>;
}

/**
 * A gateway with its bundled control plane on the shared Redis (prefixes of its own, so tests never meet), builds in
 * a temporary folder, and one tenant. The shared Redis has no password (no user of its own per deployment is
 * possible): another organisation's deployment runs only with every tenant trusted
 * (revision-gets-platform-redis-credentials.test.ts has the ACLs).
 */
export async function startDeploymentsGateway(
  name: string,
  env: Record<string, string> = {},
): Promise<DeploymentsGateway> {
  const run = uniquePrefix(`test:${name}`);
  const redis = sharedRedis();
  const workDir = mkdtempSync(join(tmpdir(), `${name}-`));
  const gw = await startTestGateway({
    REDIS_URL: SHARED_REDIS_URL,
    KEY_PREFIX: `t${randomBytes(6).toString('hex')}`,
    CONTROL_PLANE_PREFIX: `${run}:cp`,
    API_KEYS_PREFIX: `${run}:keys`,
    ROUTES_PREFIX: `${run}:routes`,
    AGENT_STORE_PREFIX: `${run}:agent`,
    DEPLOYMENT_DATA_PREFIX: `${name}-${randomBytes(4).toString('hex')}`,
    SECRETS_KEY: TEST_SECRETS_KEY,
    BUILD_WORK_DIR: workDir,
    NODE_ENV: 'test',
    TRUST_ALL_TENANTS: '1',
    ...env,
  });
  const keys = new RedisKeyRegistry(redis, { prefix: `${run}:keys` });
  const newTenant = async (): Promise<Tenant> => {
    const org = `org-${randomBytes(4).toString('hex')}`;
    const workspace = `ws-${randomBytes(4).toString('hex')}`;
    await keys.addWorkspace(org, workspace);
    return { org, workspace, key: (await keys.createKey(org)).key };
  };
  const tenant = await newTenant();
  return {
    gw,
    tenant,
    newTenant,
    workDir,
    async close() {
      await gw.close();
      rmSync(workDir, { recursive: true, force: true });
      await deleteByPrefix(redis, run);
      await redis.quit();
    },
  };
}

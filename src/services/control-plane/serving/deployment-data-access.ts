import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { DeploymentDatabases } from '../databases/deployment-databases.ts';
import type { ControlPlaneSettings } from '../settings.ts';
import type { SecretBox } from '../store/secrets.ts';
import { DeploymentRedisUsers } from './deployment-redis-users.ts';
import { adviseOnRedisServer } from './redis-server-advice.ts';

/**
 * How each deployment reaches its own data, never with the operator's credentials: a Redis user of its own (only for
 * the local host's revisions, through its forwarder: a pod of the Kubernetes host gets no Redis), and a PostgreSQL
 * database and role of its own (DEPLOYMENTS_DATABASE_URI), its password derived from SECRETS_KEY.
 */
export async function deploymentDataAccess(
  settings: ControlPlaneSettings,
  o: { readonly redis: Redis | null; readonly box: SecretBox; readonly runsRevisions: boolean; readonly log: Logger },
): Promise<{ redisUsers: DeploymentRedisUsers | null; databases: DeploymentDatabases | null }> {
  const { redis, log } = o;
  const local = o.runsRevisions && settings.revisionHost.kind === 'local';
  const redisUsers =
    local && redis && settings.redisUrl !== null
      ? await DeploymentRedisUsers.open({
          redis,
          platformUrl: settings.redisUrl,
          trustAllTenants: settings.trustAllTenants,
          log: log.child({ component: 'deployment-redis-users' }),
        })
      : null;
  // What the operator's Redis leaves open that the gateway cannot close itself (said once, never changed).
  if (redisUsers && redis)
    void adviseOnRedisServer(redis, settings.revisionRedis.maxConnections, log.child({ component: 'redis-advice' }));
  const databases =
    settings.deploymentsDatabaseUri !== null
      ? new DeploymentDatabases({
          adminUri: settings.deploymentsDatabaseUri,
          passwordKey: o.box.derive('deployment-database-passwords'),
          poolSize: settings.deploymentDatabasePoolSize,
          log: log.child({ component: 'deployment-databases' }),
        })
      : null;
  void databases?.check();
  return { redisUsers, databases };
}

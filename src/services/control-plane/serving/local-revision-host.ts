import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { KeyRegistry } from '../../../keys/types.ts';
import type { CgroupParent } from '../../revision-host/local/sandbox/cgroup.ts';
import type { NetworkProbe } from '../../revision-host/local/sandbox/network.ts';
import { LocalProcessHost } from '../../revision-host/local/local-process-host.ts';
import type { ControlPlaneSettings } from '../settings.ts';
import type { DeploymentRedisUsers } from './deployment-redis-users.ts';
import { measureRedisBytes } from '../../revision-host/local/redis-budget.ts';
import type { DeploymentLogs } from './runtime-logs.ts';
import type { DeploymentDatabases } from '../databases/deployment-databases.ts';

/** The revision host of one machine, from the operator's settings and what the control plane opened for it. */
export function localRevisionHost(
  settings: ControlPlaneSettings,
  o: {
    readonly log: Logger;
    readonly keys: Pick<KeyRegistry, 'findKey'>;
    readonly redis: Redis | null;
    readonly redisUsers: DeploymentRedisUsers | null;
    readonly databases?: Pick<DeploymentDatabases, 'accessFor'> | null;
    readonly network: NetworkProbe;
    readonly cgroups: CgroupParent | null;
    readonly runtimeLogs: DeploymentLogs;
  },
): LocalProcessHost {
  const { redis, redisUsers } = o;
  return new LocalProcessHost({
    log: o.log.child({ component: 'deployment' }),
    // Each revision reaches its data through a forwarder of the host, as its deployment's user, within its budget.
    redis:
      redisUsers &&
      redis &&
      (async (spec) => ({
        url: await redisUsers.urlFor(spec),
        measure: () => measureRedisBytes(redis, spec.dataPrefix),
      })),
    redisLimits: settings.revisionRedis,
    // Its own PostgreSQL database, as its deployment's role, through a forwarder of the host.
    database: o.databases ? (spec) => o.databases!.accessFor(spec.deploymentId) : null,
    verifyKey: async (key) => (await o.keys.findKey(key))?.org ?? null,
    loadTimeoutMs: settings.loadTimeoutMs,
    logLevel: settings.logLevel,
    ...settings.revisionAgentServer, // the operator's TTL_SWEEP_SECONDS and WEBHOOK_HOSTS_ALLOWED
    sandbox: settings.sandbox,
    network: o.network,
    networkAllow: settings.sandboxNetworkAllow,
    trustAllTenants: settings.trustAllTenants,
    cgroups: o.cgroups,
    orgCpus: settings.orgCpus,
    onOutput: (owner, stream, line) => o.runtimeLogs.add(owner.deploymentId, owner.revisionId, stream, line),
  });
}

import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RouteTable } from '../../../routing/route-table.ts';
import type { KeyRegistry } from '../../../keys/types.ts';
import type { RevisionHost } from '../../revision-host/revision-host.ts';
import type { SecretBox } from '../store/secrets.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { DeploymentRedisUsers } from './deployment-redis-users.ts';

/**
 * What serving (serving.ts) and the launch of a revision (revision-launch.ts) are given: a file of its own, so neither
 * imports the other for it.
 */
export interface ServingOptions {
  readonly host: RevisionHost;
  readonly routes: RouteTable;
  readonly store: ControlPlaneStore;
  readonly keys: Pick<KeyRegistry, 'workspaceOrg'>;
  readonly box: SecretBox;
  readonly log: Logger;
  /** The build folder of a revision. */
  readonly folderOf: (deploymentId: string, revisionId: string) => string;
  readonly memoryMb: number;
  /** MAX_MEMORY_MB: no revision gets more, whatever its record says (default 65536). */
  readonly maxMemoryMb?: number;
  readonly drainMs: number;
  /** `<prefix>:<deployment id>:` holds a deployment's Agent Server data in Redis. */
  readonly dataPrefix: string;
  /** Redis holding that data, to remove it on delete; null = in memory (it goes with the process). */
  readonly redis: Redis | null;
  /** The deployments' own Redis users, deleted with them; null = none made. */
  readonly redisUsers?: Pick<DeploymentRedisUsers, 'remove'> | null;
  /** How long a replaced revision keeps accepting after its route moved (default 2 s). */
  readonly routeSettleMs?: number;
  /** First restart delay after a crash; doubles up to 30 s. */
  readonly restartDelayMs?: number;
}

import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RouteTable } from '../../../routing/route-table.ts';
import type { ArtifactStore } from '../builds/artifacts.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { DeploymentRedisUsers } from './deployment-redis-users.ts';
import type { LaunchOptions } from './revision-launch.ts';

/** What serving (serving.ts) and its crash restarts (crash-restarts.ts) are given; a launch needs only LaunchOptions. */
export interface ServingOptions extends LaunchOptions {
  readonly routes: RouteTable;
  readonly store: ControlPlaneStore;
  readonly log: Logger;
  /** Where builds are packed (ARTIFACTS_DIR), for a host that runs revisions from their artifacts. */
  readonly artifacts?: ArtifactStore | null;
  readonly drainMs: number;
  /** Redis holding that data, to remove it on delete; null = in memory (it goes with the process). */
  readonly redis: Redis | null;
  /** The deployments' own Redis users, deleted with them; null = none made. */
  readonly redisUsers?: Pick<DeploymentRedisUsers, 'remove'> | null;
  /** How long a replaced revision keeps accepting after its route moved (default 2 s). */
  readonly routeSettleMs?: number;
  /** First restart delay after a crash; doubles up to 30 s. */
  readonly restartDelayMs?: number;
}

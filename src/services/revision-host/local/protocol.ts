/**
 * The messages between the control plane and a revision's process
 * (agent-process.ts): JSON lines on the process's fd 3 (channel.ts), not
 * Node's IPC channel, so app code has no `process.send` into the gateway and
 * every line it could write there is bounded and checked (messages.ts).
 */
export interface ProcessControl {
  readonly type: 'start';
  readonly deploymentId: string;
  readonly revisionId: string;
  /** Absolute path of the app config. */
  readonly configPath: string;
  /** The config's folder inside the repository ('' at its root): compile errors name files from the repository's root. */
  readonly sourcePrefix?: string;
  /**
   * The listening socket the host made and handed it (a Unix socket in a folder of the host's): the route's target,
   * whatever the process says. It serves there, never on a port another process could take.
   */
  readonly listenFd: number;
  readonly org: string | null;
  /**
   * Redis for the Agent Server's data: the path of a Unix socket the host forwards to Redis as the deployment's own
   * user (limited to `dataPrefix`, redis-forward.ts), so the process holds no credential; null = in memory. Keys are
   * always checked by the host (`verify`): the process never reads the registry.
   */
  readonly redisSocket: string | null;
  readonly dataPrefix: string;
  readonly logLevel: string;
  readonly heartbeatMs: number;
  /** The operator's TTL_SWEEP_SECONDS (in ms): how often expired threads and store items are swept. */
  readonly ttlSweepMs: number;
  /** The operator's WEBHOOK_HOSTS_ALLOWED: what a run's webhook may reach although loopback, private or reserved. */
  readonly webhookHostsAllowed: readonly string[];
}

export type ToChild =
  | ProcessControl
  | { readonly type: 'verified'; readonly id: number; readonly org: string | null }
  | { readonly type: 'stop'; readonly drainMs: number };

export type FromChild =
  | { readonly type: 'ready'; readonly graphs: readonly string[] }
  | { readonly type: 'failed'; readonly reason: string }
  | { readonly type: 'verify'; readonly id: number; readonly key: string };

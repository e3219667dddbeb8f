/**
 * The messages between the control plane and a revision's process
 * (agent-process.ts), over the IPC channel of `child_process.fork`.
 */
export interface ProcessControl {
  readonly type: 'start';
  readonly deploymentId: string;
  readonly revisionId: string;
  /** Absolute path of the app config. */
  readonly configPath: string;
  readonly org: string | null;
  /** Redis for the Agent Server's data and the key registry; null = in memory, keys checked by the parent over IPC. */
  readonly redisUrl: string | null;
  readonly dataPrefix: string;
  readonly keysPrefix: string;
  readonly logLevel: string;
  readonly heartbeatMs: number;
}

export type ToChild =
  | ProcessControl
  | { readonly type: 'verified'; readonly id: number; readonly org: string | null }
  | { readonly type: 'stop'; readonly drainMs: number };

export type FromChild =
  | { readonly type: 'ready'; readonly url: string; readonly graphs: readonly string[] }
  | { readonly type: 'failed'; readonly reason: string }
  | { readonly type: 'verify'; readonly id: number; readonly key: string };

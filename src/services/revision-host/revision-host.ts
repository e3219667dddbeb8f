/**
 * The seam between the control plane and whatever runs a revision's Agent
 * Server: start one from its build folder, know where it answers, check its
 * health, stop it after a drain. The local implementation
 * (local/local-process-host.ts) runs each revision as a sandboxed child process served on a Unix socket; the
 * Kubernetes one (kubernetes/) applies one Deployment, Service, Secret and NetworkPolicy per revision (target = the
 * Service's cluster address, `exited` = its pods failing, `stop` = delete after the drain).
 */
export interface RevisionSpec {
  readonly deploymentId: string;
  readonly revisionId: string;
  /** The revision's build folder (the checkout, with its dependencies installed). */
  readonly appDir: string;
  /** The app config, relative to `appDir` (`langgraph.json`). */
  readonly configPath: string;
  /** The folder of `appDir` inside the repository ('' or absent at its root), for the paths of compile errors. */
  readonly sourcePrefix?: string;
  /** The organisation whose API keys the deployment accepts (without a custom auth handler); null = none. */
  readonly org: string | null;
  /** Environment of the app: the `env` of its langgraph.json, then its secrets (decrypted only into this process). */
  readonly env: Readonly<Record<string, string>>;
  /** Heap bound of the process, MiB. */
  readonly memoryMb: number;
  /** Prefix of the revision's Agent Server data in Redis (one per deployment); used when the host has Redis. */
  readonly dataPrefix: string;
  /**
   * The build as an artifact: a gzipped tar of the build folder (the checkout with its dependencies), named by its
   * sha256, which any gateway replica serves. What a host that does not share this machine's disk fetches (the
   * Kubernetes host's pods); absent for a build made before artifacts were kept (the local host runs `appDir`).
   */
  readonly artifact?: { readonly sha256: string; readonly bytes: number } | null;
}

/** Memory of a revision beyond its heap bound (`memoryMb`): the runtime, compiled code, tsx, buffers. Every host. */
export const MEMORY_OVERHEAD_MB = 256;

export interface RevisionExit {
  /** One line for a person: `exit code 1: Error: boom`, `killed by SIGKILL`, `out of memory`. */
  readonly reason: string;
  /** Whether the host was asked to stop it (a drain), as opposed to a crash. */
  readonly requested: boolean;
}

export interface RunningRevision {
  readonly deploymentId: string;
  readonly revisionId: string;
  /** Where its Agent Server answers, e.g. `http://127.0.0.1:41234`. */
  readonly target: string;
  /** The OS process id, when it is a local process. */
  readonly pid: number | undefined;
  /** Settles once, when it has stopped (asked to or not). */
  readonly exited: Promise<RevisionExit>;
  /** Its Agent Server answers `/ok` now. */
  health(): Promise<boolean>;
  /** Stops taking connections, lets in-flight requests and open streams finish for up to `drainMs`, then ends it. */
  stop(drainMs: number): Promise<void>;
}

/** The app could not load (a graph or the auth handler failed to import, a bad config): one line naming what. */
export class RevisionLoadError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RevisionLoadError';
  }
}

export interface RevisionHost {
  readonly kind: string;
  /**
   * What it starts a revision from: its build folder on this machine (`folder`, the default) or its artifact
   * (`artifact`: a pod fetches it). Whether a kept build can serve again is asked in those terms (build-places.ts).
   */
  readonly runsFrom?: 'folder' | 'artifact';
  /**
   * Starts the revision and resolves once every graph and the auth handler are loaded and it listens; rejects with a
   * RevisionLoadError when the app fails to load (or does not get ready in time, or `signal` aborts: it is stopped).
   */
  start(spec: RevisionSpec, signal?: AbortSignal): Promise<RunningRevision>;
  /**
   * Why this host would not run a deployment of organisation `org` (what the operator must change), or null: asked at
   * create, so the deployment is refused then rather than accepted and failed at its build.
   */
  refusalFor?(org: string | null): string | null;
  /**
   * Whether the host restarts a revision that stops by itself (a Kubernetes Deployment does): serving then only shows
   * the exit (`serving_error`) and starts nothing. Default false: serving restarts it (serving/crash-restarts.ts).
   */
  readonly restartsItself?: boolean;
  /**
   * Whether its revisions go on when the gateway that started them stops (pods of a cluster): then a gateway that
   * closes leaves them and their routes as they are, and the next one takes them over, rather than stopping them.
   */
  readonly revisionsOutliveGateway?: boolean;
  /** Stops every revision it started (no drain). */
  close(): Promise<void>;
}

import {
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  Watch,
  type KubernetesObject,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  RevisionLoadError,
  type RevisionExit,
  type RevisionHost,
  type RevisionSpec,
  type RunningRevision,
} from '../revision-host.ts';
import { revisionToken } from '../revision-token.ts';
import { CONTAINER, revisionManifests, revisionLabels, type ManifestSettings } from './manifests.ts';
import { PodLogs } from './pod-logs.ts';
import { POD_HEALTH_PATH } from './pod-contract.ts';
import { revisionStatus, type RevisionStatus } from './revision-status.ts';
import { watchLoop } from './watch-loop.ts';

/**
 * RevisionHost on Kubernetes: `start` server-side applies a revision's Secret, Deployment, Service and NetworkPolicy
 * (any replica may apply the same: one field manager, forced), then watches the Deployment and its pods until it is
 * Available (the target is the Service's cluster address) or Kubernetes says it will not be. After that it keeps
 * watching: pods crash-looping or the Deployment deleted settle `exited`. `stop` deletes the objects; `close` only
 * stops the watches (other replicas serve the same revisions).
 */
export interface KubernetesHostOptions {
  readonly log: Logger;
  readonly manifests: Omit<ManifestSettings, 'terminationGraceSeconds'>;
  /** Key of the revisions' bearer tokens (derived from SECRETS_KEY). */
  readonly tokenKey: Buffer;
  /** Drain the pods get between SIGTERM and SIGKILL, ms (terminationGracePeriodSeconds ≥ it). */
  readonly drainMs: number;
  /** Credentials; default KubeConfig.loadFromDefault() (in-cluster, or KUBECONFIG). */
  readonly kubeConfig?: KubeConfig;
  readonly healthTimeoutMs?: number;
  /**
   * Variables the host sets over the app's in the revision's Secret: its own database (`DATABASE_URI` for its
   * deployment's role, straight to the operator's PostgreSQL: a pod has no forwarder of the gateway), when the control
   * plane makes one per deployment.
   */
  readonly hostEnv?: (spec: RevisionSpec) => Promise<Readonly<Record<string, string>>>;
  /** Each line its pods print (read through the pod log API), with whose revision it is. */
  readonly onOutput?: (owner: { deploymentId: string; revisionId: string }, stream: 'stdout', line: string) => void;
}

const FIELD_MANAGER = 'agent-gateway';

export class KubernetesRevisionHost implements RevisionHost {
  readonly kind = 'kubernetes';
  /** Kubernetes restarts a crashed container itself: serving need not. */
  readonly restartsItself = true;
  /** Its pods run from the build's artifact, which any replica serves. */
  readonly runsFrom = 'artifact';
  /** Its revisions go on when a gateway stops (the other replicas, or the next gateway, serve them). */
  readonly revisionsOutliveGateway = true;
  private readonly kubeConfig: KubeConfig;
  private readonly objects: KubernetesObjectApi;
  private readonly watch: Watch;
  private readonly closing = new AbortController();

  constructor(private readonly o: KubernetesHostOptions) {
    const kc = (this.kubeConfig = o.kubeConfig ?? defaultKubeConfig());
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.watch = new Watch(kc);
  }

  refusalFor(): string | null {
    return null; // Each revision runs in its own pod behind its own NetworkPolicy.
  }

  async start(spec: RevisionSpec, signal?: AbortSignal): Promise<RunningRevision> {
    const since = new Date();
    const log = this.o.log.child({ deploymentId: spec.deploymentId, revisionId: spec.revisionId });
    const graceSeconds = Math.ceil(this.o.drainMs / 1000) + 5;
    if (!spec.artifact)
      throw new RevisionLoadError(
        `revision ${spec.revisionId} was built before builds were kept as artifacts: patch the deployment with a repo_ref to build again`,
      );
    const token = revisionToken(this.o.tokenKey, spec);
    const hostEnv = (await this.o.hostEnv?.(spec)) ?? {};
    const withHostEnv = { ...spec, env: { ...spec.env, ...hostEnv } };
    const m = revisionManifests(withHostEnv, { ...this.o.manifests, terminationGraceSeconds: graceSeconds }, token);
    const all: KubernetesObject[] = [m.secret, m.service, m.networkPolicy, m.deployment];
    const watching = new AbortController();
    const stopWatching = () => watching.abort();
    const onOutput = this.o.onOutput;
    const logs =
      onOutput &&
      new PodLogs({
        kubeConfig: this.kubeConfig,
        namespace: this.o.manifests.namespace,
        container: CONTAINER,
        since,
        onLine: (line) => onOutput(spec, 'stdout', line),
        log,
      });
    watching.signal.addEventListener('abort', () => logs?.close(), { once: true });
    this.closing.signal.addEventListener('abort', stopWatching, { once: true });
    const remove = () => this.deleteAll(all, log);
    try {
      if (signal?.aborted) throw new RevisionLoadError('aborted before it started');
      for (const obj of all)
        await this.objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
      log.info({ name: m.name, target: m.target }, 'revision applied');
    } catch (err) {
      stopWatching();
      if (err instanceof RevisionLoadError) throw err;
      await remove(); // What was applied before the failure.
      throw new RevisionLoadError(`could not apply the revision's objects: ${oneLine(err)}`);
    }
    let settleExit!: (e: RevisionExit) => void;
    const exited = new Promise<RevisionExit>((resolve) => (settleExit = resolve));
    let phase: 'starting' | 'running' | 'done' = 'starting';
    let onStatus!: (s: RevisionStatus) => void;
    const ready = new Promise<void>((resolve, reject) => {
      onStatus = (s) => {
        if (phase === 'starting') {
          if (s.state === 'ready') ((phase = 'running'), resolve());
          else if (s.state === 'failed') reject(new RevisionLoadError(s.reason));
          else if (s.state === 'gone' && seen) reject(new RevisionLoadError('its Deployment was deleted'));
        } else if (phase === 'running' && (s.state === 'failed' || s.state === 'gone')) {
          phase = 'done';
          stopWatching();
          settleExit({ reason: s.state === 'gone' ? 'its Deployment was deleted' : s.reason, requested: false });
        }
      };
      const aborted = () => reject(new RevisionLoadError('aborted while starting'));
      if (signal?.aborted) aborted();
      else signal?.addEventListener('abort', aborted, { once: true });
    });
    let seen = false;
    let deployment: V1Deployment | undefined;
    let pods: ReadonlyMap<string, KubernetesObject> = new Map();
    const selector = Object.entries(revisionLabels(spec))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const ns = this.o.manifests.namespace;
    const deps = { objects: this.objects, watch: this.watch, log };
    const update = () => onStatus(revisionStatus(deployment, pods));
    watchLoop(
      deps,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        path: `/apis/apps/v1/namespaces/${ns}/deployments`,
        namespace: ns,
        labelSelector: selector,
      },
      (view) => {
        deployment = view.get(m.name);
        seen ||= deployment !== undefined;
        update();
      },
      watching.signal,
    );
    watchLoop(
      deps,
      { apiVersion: 'v1', kind: 'Pod', path: `/api/v1/namespaces/${ns}/pods`, namespace: ns, labelSelector: selector },
      (view) => {
        pods = view;
        logs?.follow(podsWithOutput(view));
        update();
      },
      watching.signal,
    );
    try {
      await ready;
    } catch (err) {
      phase = 'done';
      stopWatching();
      log.warn({ reason: (err as Error).message }, 'revision failed to start: deleting it');
      await remove();
      throw err;
    }
    log.info('revision ready');
    const timeoutMs = this.o.healthTimeoutMs ?? 5000;
    return {
      deploymentId: spec.deploymentId,
      revisionId: spec.revisionId,
      target: m.target,
      pid: undefined,
      exited,
      health: async () => {
        try {
          const res = await fetch(m.target + POD_HEALTH_PATH, { signal: AbortSignal.timeout(timeoutMs) });
          await res.body?.cancel();
          return res.ok;
        } catch {
          return false;
        }
      },
      stop: async () => {
        if (phase === 'done') return;
        phase = 'done';
        stopWatching();
        // The pods drain for terminationGracePeriodSeconds (≥ the drain) after SIGTERM.
        await remove();
        settleExit({ reason: 'stopped', requested: true });
      },
    };
  }

  async close(): Promise<void> {
    this.closing.abort(); // Watches only: the revisions go on for the other replicas.
  }

  private async deleteAll(all: readonly KubernetesObject[], log: Logger): Promise<void> {
    for (const obj of [...all].reverse()) {
      try {
        await this.objects.delete(obj, undefined, undefined, undefined, undefined, 'Background');
      } catch (err) {
        if ((err as { code?: number }).code !== 404)
          log.warn({ kind: obj.kind, err: oneLine(err) }, 'could not delete');
      }
    }
  }
}

/** The pods whose container runs or ran: a waiting one has no log to read yet. */
function podsWithOutput(pods: ReadonlyMap<string, KubernetesObject>): string[] {
  return [...pods.entries()]
    .filter(([, pod]) =>
      ((pod as V1Pod).status?.containerStatuses ?? []).some(
        (c) => c.name === CONTAINER && (c.state?.running !== undefined || c.state?.terminated !== undefined),
      ),
    )
    .map(([name]) => name);
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

function oneLine(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  const body = typeof e.body === 'string' ? safeMessage(e.body) : undefined;
  return (body ?? e.message ?? String(err)).split('\n')[0]!.slice(0, 300);
}

function safeMessage(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { message?: string }).message;
  } catch {
    return undefined;
  }
}

/**
 * A DOUBLE of the Kubernetes API server (not Kubernetes): an HTTP server on port 0 that keeps objects in memory and
 * answers what the revision host's real `@kubernetes/client-node` asks: discovery, server-side apply
 * (`application/apply-patch+yaml` PATCH with fieldManager/force: creates or updates, resourceVersion and generation;
 * 409 on a conflicting manager without force), GET, LIST (labelSelector `k=v,...`), DELETE (404 when missing) and
 * watches (`?watch=true&resourceVersion=`) streaming ADDED/MODIFIED/DELETED JSON lines, with an ERROR 410 event for
 * a resourceVersion older than its history, and pods' logs (`pods/{name}/log`, followed). Tests script what controllers would do: a Deployment's status, pods and
 * their container statuses. No controller runs here.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown> & { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
};
interface Event {
  readonly rv: number;
  readonly plural: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: Obj;
}

const RESOURCES: Record<string, { plural: string; kind: string }[]> = {
  v1: [
    { plural: 'pods', kind: 'Pod' },
    { plural: 'services', kind: 'Service' },
    { plural: 'secrets', kind: 'Secret' },
  ],
  'apps/v1': [{ plural: 'deployments', kind: 'Deployment' }],
  'networking.k8s.io/v1': [{ plural: 'networkpolicies', kind: 'NetworkPolicy' }],
};

export class KubernetesApiDouble {
  /** Every request, `METHOD path?query`, for assertions. */
  readonly requests: string[] = [];
  private readonly objects = new Map<string, Obj>(); // `${plural}/${ns}/${name}`
  private readonly managers = new Map<string, string>();
  private readonly history: Event[] = [];
  private readonly watchers = new Set<{ plural: string; ns: string; selector: string; res: ServerResponse }>();
  private rv = 1;
  private readonly podLogs = new Map<string, string>();
  private readonly logFollowers = new Set<{ key: string; res: ServerResponse }>();
  /** Watches asking for an older resourceVersion than this get a 410 ERROR event. */
  private oldestRv = 0;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<KubernetesApiDouble> {
    const server = createServer();
    const double = new KubernetesApiDouble(server);
    server.on('request', (req, res) => void double.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return double;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A KubeConfig for the real client: this double, no auth. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'double', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'nobody' }],
      contexts: [{ name: 'double', cluster: 'double', user: 'nobody' }],
      currentContext: 'double',
    });
    return kc;
  }

  get(plural: string, ns: string, name: string): Obj | undefined {
    return this.objects.get(`${plural}/${ns}/${name}`);
  }

  list(plural: string): Obj[] {
    return [...this.objects.entries()].filter(([k]) => k.startsWith(plural + '/')).map(([, o]) => o);
  }

  /** What the Deployment controller would write: its conditions and ready replicas. */
  setDeploymentStatus(ns: string, name: string, status: Record<string, unknown>): void {
    const d = this.must('deployments', ns, name);
    this.put('deployments', { ...d, status }, 'MODIFIED');
  }

  available(ns: string, name: string): void {
    this.setDeploymentStatus(ns, name, {
      readyReplicas: 1,
      conditions: [
        { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
        { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
      ],
    });
  }

  progressDeadlineExceeded(ns: string, name: string): void {
    this.setDeploymentStatus(ns, name, {
      conditions: [
        {
          type: 'Progressing',
          status: 'False',
          reason: 'ProgressDeadlineExceeded',
          message: `ReplicaSet "${name}-x" has timed out progressing.`,
        },
      ],
    });
  }

  /** A pod of the Deployment `name` (its labels) with these container statuses. */
  setPod(ns: string, deploymentName: string, podName: string, containerStatuses: unknown[]): void {
    const d = this.must('deployments', ns, deploymentName);
    const labels = (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    const existing = this.get('pods', ns, podName);
    const pod: Obj = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: podName, namespace: ns, labels },
      status: { phase: 'Running', containerStatuses },
    };
    this.put('pods', pod, existing ? 'MODIFIED' : 'ADDED');
  }

  /** Forgets the history: watches from an older resourceVersion get 410 Gone. */
  expireHistory(): void {
    this.oldestRv = this.rv;
    this.history.length = 0;
  }

  /** Ends every open watch (the API server's watch timeout). */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  async close(): Promise<void> {
    this.endWatches();
    for (const f of this.logFollowers) f.res.end();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    this.requests.push(`${req.method} ${url.pathname}${url.search}`);
    const body = await readBody(req);
    const discovery = /^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))$/.exec(url.pathname);
    if (discovery) {
      const gv = discovery[1] ?? discovery[2]!;
      const resources = (RESOURCES[gv] ?? []).map((r) => ({
        name: r.plural,
        kind: r.kind,
        namespaced: true,
        singularName: '',
        verbs: [],
      }));
      return json(res, 200, { kind: 'APIResourceList', groupVersion: gv, resources });
    }
    const podLog = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/.exec(url.pathname);
    if (podLog && req.method === 'GET') return this.followLog(res, podLog[1]!, podLog[2]!, url.searchParams);
    const m = /^\/(?:api\/v1|apis\/[^/]+\/[^/]+)\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return status(res, 404, 'NotFound', `no route ${url.pathname}`);
    const [, ns, plural, name] = m as unknown as [string, string, string, string | undefined];
    const selector = url.searchParams.get('labelSelector') ?? '';
    if (req.method === 'GET' && name === undefined && url.searchParams.get('watch') === 'true') {
      return this.watch(res, plural, ns, selector, Number(url.searchParams.get('resourceVersion') || '0'));
    }
    if (req.method === 'GET' && name === undefined) {
      const items = this.list(plural).filter((o) => o.metadata.namespace === ns && matches(o, selector));
      return json(res, 200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
    }
    if (name === undefined) return status(res, 405, 'MethodNotAllowed', 'not here');
    const key = `${plural}/${ns}/${name}`;
    const existing = this.objects.get(key);
    if (req.method === 'GET')
      return existing ? json(res, 200, existing) : status(res, 404, 'NotFound', `${plural} "${name}" not found`);
    if (req.method === 'DELETE') {
      if (!existing) return status(res, 404, 'NotFound', `${plural} "${name}" not found`);
      this.objects.delete(key);
      this.managers.delete(key);
      this.emit(plural, 'DELETED', existing);
      return json(res, 200, { kind: 'Status', status: 'Success' });
    }
    if (req.method === 'PATCH' && req.headers['content-type'] === 'application/apply-patch+yaml') {
      const manager = url.searchParams.get('fieldManager') ?? '';
      const force = url.searchParams.get('force') === 'true';
      if (existing && this.managers.get(key) !== manager && !force) {
        return status(res, 409, 'Conflict', `Apply failed with 1 conflict: conflict with "${this.managers.get(key)}"`);
      }
      const applied = JSON.parse(body) as Obj;
      const sameSpec = existing && JSON.stringify(existing.spec) === JSON.stringify(applied.spec);
      const generation = existing ? Number(existing.metadata.generation) + (sameSpec ? 0 : 1) : 1;
      const merged: Obj = {
        ...applied,
        metadata: { ...applied.metadata, namespace: ns, generation, uid: existing?.metadata.uid ?? `uid-${this.rv}` },
        ...(existing?.status !== undefined ? { status: existing.status } : {}),
      };
      this.managers.set(key, manager);
      return json(res, existing ? 200 : 201, this.put(plural, merged, existing ? 'MODIFIED' : 'ADDED'));
    }
    return status(res, 415, 'UnsupportedMediaType', `${req.method} ${req.headers['content-type']}`);
  }

  /** What a pod's container prints: kept, and sent to every follower of its log (`pods/{name}/log?follow=true`). */
  writePodLog(ns: string, pod: string, text: string): void {
    const key = `${ns}/${pod}`;
    this.podLogs.set(key, (this.podLogs.get(key) ?? '') + text);
    for (const f of this.logFollowers) if (f.key === key) f.res.write(text);
  }

  /** The log requests' queries, per pod, for assertions (container, follow, sinceTime). */
  readonly logRequests: { pod: string; query: Record<string, string> }[] = [];

  private followLog(res: ServerResponse, ns: string, pod: string, q: URLSearchParams): void {
    this.logRequests.push({ pod, query: Object.fromEntries(q) });
    if (!this.objects.has(`pods/${ns}/${pod}`)) return status(res, 404, 'NotFound', `pods "${pod}" not found`);
    const key = `${ns}/${pod}`;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write(this.podLogs.get(key) ?? '');
    if (q.get('follow') !== 'true') return void res.end();
    const follower = { key, res };
    this.logFollowers.add(follower);
    res.on('close', () => this.logFollowers.delete(follower));
  }

  private watch(res: ServerResponse, plural: string, ns: string, selector: string, from: number): void {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (from < this.oldestRv) {
      res.end(
        JSON.stringify({
          type: 'ERROR',
          object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' },
        }) + '\n',
      );
      return;
    }
    const w = { plural, ns, selector, res };
    for (const e of this.history) if (e.rv > from && this.wants(w, e)) res.write(line(e));
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
  }

  private wants(w: { plural: string; ns: string; selector: string }, e: Event): boolean {
    return e.plural === w.plural && e.object.metadata.namespace === w.ns && matches(e.object, w.selector);
  }

  private put(plural: string, obj: Obj, type: 'ADDED' | 'MODIFIED'): Obj {
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } };
    this.objects.set(`${plural}/${obj.metadata.namespace}/${obj.metadata.name}`, stored);
    this.emit(plural, type, stored, false);
    return stored;
  }

  private emit(plural: string, type: Event['type'], object: Obj, bump = true): void {
    const rv = bump ? ++this.rv : this.rv;
    const e: Event = {
      rv,
      plural,
      type,
      object: { ...object, metadata: { ...object.metadata, resourceVersion: String(rv) } },
    };
    this.history.push(e);
    for (const w of this.watchers) if (this.wants(w, e)) w.res.write(line(e));
  }

  private must(plural: string, ns: string, name: string): Obj {
    const o = this.get(plural, ns, name);
    if (!o) throw new Error(`the double has no ${plural}/${ns}/${name}`);
    return o;
  }
}

function matches(o: Obj, selector: string): boolean {
  if (selector === '') return true;
  return selector.split(',').every((p) => {
    const [k, v] = p.split('=');
    return o.metadata.labels?.[k!] === v;
  });
}

function line(e: Event): string {
  return JSON.stringify({ type: e.type, object: e.object }) + '\n';
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

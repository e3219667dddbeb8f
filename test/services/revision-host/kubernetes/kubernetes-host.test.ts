/**
 * The Kubernetes revision host, with the real `@kubernetes/client-node`, against a double of the Kubernetes API
 * (test/helpers/kubernetes-api-double.ts): start applies the four objects and resolves with the Service's address
 * once the Deployment is Available; each way Kubernetes says a pod will not run rejects with a RevisionLoadError
 * naming it (and deletes the objects); abort deletes; a crash loop after ready settles `exited`; stop deletes; two
 * hosts (two replicas) applying one revision do not conflict; a watch that gets 410 Gone relists and still sees
 * Available.
 */
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  KubernetesRevisionHost,
  type KubernetesHostOptions,
} from '../../../../src/services/revision-host/kubernetes/kubernetes-host.ts';
import { revisionObjectName } from '../../../../src/services/revision-host/kubernetes/manifests.ts';
import { RevisionLoadError, type RevisionSpec } from '../../../../src/services/revision-host/revision-host.ts';
import { KubernetesApiDouble } from '../../../helpers/kubernetes-api-double.ts';
import { MemoryRouteTable } from '../../../../src/routing/memory-route-table.ts';
import { Serving } from '../../../../src/services/control-plane/serving/serving.ts';
import { MemoryControlPlaneStore } from '../../../../src/services/control-plane/store/memory-store.ts';
import { SecretBox } from '../../../../src/services/control-plane/store/secrets.ts';

const NS = 'agents';
const spec: RevisionSpec = {
  deploymentId: 'dep-1',
  revisionId: 'rev-1',
  appDir: '/nowhere',
  configPath: 'langgraph.json',
  org: 'acme',
  env: { OPENAI_API_KEY: 'sk-test' },
  memoryMb: 512,
  dataPrefix: 'd:dep-1',
  artifact: { sha256: 'a'.repeat(64), bytes: 10 },
};
const name = revisionObjectName(spec.deploymentId, spec.revisionId);
const plurals = ['secrets', 'services', 'networkpolicies', 'deployments'];

let api: KubernetesApiDouble;
const hosts: KubernetesRevisionHost[] = [];

function host(onOutput?: KubernetesHostOptions['onOutput']): KubernetesRevisionHost {
  const h = new KubernetesRevisionHost({
    ...(onOutput && { onOutput }),
    log: pino({ level: 'silent' }),
    kubeConfig: api.kubeConfig(),
    tokenKey: Buffer.alloc(32, 7),
    drainMs: 10_000,
    healthTimeoutMs: 500,
    manifests: {
      namespace: NS,
      image: 'registry.example/agent-gateway:1',
      gatewayInternalUrl: 'http://agent-gateway-internal.agents.svc:8081',
      clusterDomain: 'cluster.local',
      gatewayPodLabels: { 'app.kubernetes.io/name': 'agent-gateway' },
      egressCidrs: [],
      imagePullSecret: null,
      loadTimeoutSeconds: 60,
      control: { logLevel: 'info', heartbeatMs: 10_000, ttlSweepMs: 60_000, webhookHostsAllowed: [] },
    },
  });
  hosts.push(h);
  return h;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const applied = () => until(() => api.get('deployments', NS, name) !== undefined, 'the Deployment');
const watching = () => until(() => api.openWatches >= 2, 'two watches');

beforeEach(async () => {
  api = await KubernetesApiDouble.start();
});
afterEach(async () => {
  for (const h of hosts.splice(0)) await h.close();
  await api.close();
});

describe('KubernetesRevisionHost', () => {
  it('applies the four objects and resolves with the Service target once Available', async () => {
    const h = host();
    expect(h.restartsItself).toBe(true);
    expect(h.refusalFor()).toBeNull();
    const started = h.start(spec);
    await applied();
    for (const p of plurals) expect(api.get(p, NS, name), p).toBeDefined();
    expect(api.requests.some((r) => r.includes('fieldManager=agent-gateway') && r.includes('force=true'))).toBe(true);
    await watching();
    api.setPod(NS, name, `${name}-abc`, [{ name: 'api-server', ready: true, restartCount: 0, state: { running: {} } }]);
    api.available(NS, name);
    const running = await started;
    expect(running.target).toBe(`http://${name}.${NS}.svc.cluster.local:8000`);
    expect(running.pid).toBeUndefined();
    expect(await running.health()).toBe(false); // No such address from here: a timeout or refusal, not a throw.
  });

  const failures: [string, (a: KubernetesApiDouble) => void, RegExp][] = [
    ['ProgressDeadlineExceeded', (a) => a.progressDeadlineExceeded(NS, name), /^ProgressDeadlineExceeded: /],
    [
      'CrashLoopBackOff',
      (a) =>
        a.setPod(NS, name, 'p', [
          {
            name: 'api-server',
            state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s' } },
            lastState: { terminated: { reason: 'Error', exitCode: 1, message: 'Error: graph "agent" failed to load' } },
          },
        ]),
      /^CrashLoopBackOff: back-off 10s \(last: Error, exit code 1, Error: graph "agent" failed to load\)$/,
    ],
    [
      'OOMKilled',
      (a) =>
        a.setPod(NS, name, 'p', [
          {
            name: 'api-server',
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
          },
        ]),
      /^OOMKilled: out of memory/,
    ],
    [
      'ImagePullBackOff',
      (a) =>
        a.setPod(NS, name, 'p', [
          { name: 'api-server', state: { waiting: { reason: 'ImagePullBackOff', message: 'pull access denied' } } },
        ]),
      /^ImagePullBackOff: pull access denied$/,
    ],
    [
      'ErrImagePull',
      (a) => a.setPod(NS, name, 'p', [{ name: 'api-server', state: { waiting: { reason: 'ErrImagePull' } } }]),
      /^ErrImagePull$/,
    ],
    [
      'CreateContainerConfigError',
      (a) =>
        a.setPod(NS, name, 'p', [
          {
            name: 'api-server',
            state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "x" not found' } },
          },
        ]),
      /^CreateContainerConfigError: secret "x" not found$/,
    ],
  ];
  for (const [reason, script, expected] of failures) {
    it(`rejects with a RevisionLoadError naming ${reason}, and deletes the objects`, async () => {
      const started = host().start(spec);
      const caught = started.catch((e: unknown) => e);
      await applied();
      await watching();
      script(api);
      const err = await caught;
      expect(err).toBeInstanceOf(RevisionLoadError);
      expect((err as Error).message).toMatch(expected);
      for (const p of plurals) expect(api.get(p, NS, name), p).toBeUndefined();
    });
  }

  it('an abort while starting rejects and deletes', async () => {
    const ac = new AbortController();
    const caught = host()
      .start(spec, ac.signal)
      .catch((e: unknown) => e);
    await applied();
    ac.abort();
    const err = await caught;
    expect(err).toBeInstanceOf(RevisionLoadError);
    expect((err as Error).message).toBe('aborted while starting');
    for (const p of plurals) expect(api.get(p, NS, name), p).toBeUndefined();
  });

  async function ready(h: KubernetesRevisionHost) {
    const started = h.start(spec);
    await applied();
    await watching();
    api.available(NS, name);
    return started;
  }

  it('a crash loop after ready settles exited, not requested', async () => {
    const running = await ready(host());
    api.setPod(NS, name, 'p', [
      {
        name: 'api-server',
        state: { waiting: { reason: 'CrashLoopBackOff' } },
        lastState: { terminated: { reason: 'Error', exitCode: 1 } },
      },
    ]);
    const exit = await running.exited;
    expect(exit.requested).toBe(false);
    expect(exit.reason).toMatch(/^CrashLoopBackOff \(last: Error, exit code 1\)$/);
  });

  it('stop deletes the objects and settles exited, requested', async () => {
    const running = await ready(host());
    await running.stop(10_000);
    expect(await running.exited).toEqual({ reason: 'stopped', requested: true });
    for (const p of plurals) expect(api.get(p, NS, name), p).toBeUndefined();
  });

  it('two replicas applying the same revision do not conflict and resolve the same target', async () => {
    const [a, b] = [host(), host()];
    const [sa, sb] = [a.start(spec), b.start(spec)];
    await applied();
    await until(() => api.openWatches >= 4, 'four watches');
    api.available(NS, name);
    const [ra, rb] = await Promise.all([sa, sb]);
    expect(ra.target).toBe(rb.target);
    expect(api.list('deployments')).toHaveLength(1);
  });

  it('a watch that gets 410 Gone relists and still sees Available', async () => {
    const started = host().start(spec);
    await applied();
    await watching();
    api.expireHistory();
    api.endWatches(); // They reconnect from their old resourceVersion: 410, then relist.
    api.available(NS, name);
    const running = await started;
    expect(running.target).toContain(name);
    expect(
      api.requests.filter((r) => r.startsWith('GET /apis/apps/v1/namespaces/agents/deployments?')).length,
    ).toBeGreaterThan(1);
  });

  it('refuses a revision built before builds were kept as artifacts, applying nothing', async () => {
    const err = await host()
      .start({ ...spec, artifact: null })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RevisionLoadError);
    expect((err as Error).message).toMatch(/built before builds were kept as artifacts: patch the deployment/);
    expect(api.list('deployments')).toEqual([]);
  });

  it('a gateway that stops leaves its revisions and routes to the other replicas; a deleted deployment goes', async () => {
    const h = host();
    expect(h.revisionsOutliveGateway).toBe(true);
    const routes = new MemoryRouteTable();
    const serving = new Serving({
      host: h,
      routes,
      store: new MemoryControlPlaneStore('us'),
      keys: { workspaceOrg: async () => 'acme' },
      box: SecretBox.ephemeral(),
      log: pino({ level: 'silent' }),
      folderOf: () => '/nowhere',
      memoryMb: 512,
      drainMs: 0,
      dataPrefix: 'd',
      redis: null,
    });
    const started = h.start(spec);
    await applied();
    await watching();
    api.available(NS, name);
    const running = await started;
    expect(
      await serving.promote({ id: spec.deploymentId, tenant_id: 'ws' }, spec.revisionId, running, async () => true),
    ).toBe(true);
    await serving.close();
    for (const p of plurals) expect(api.get(p, NS, name), p).toBeDefined();
    expect(routes.get(spec.deploymentId)?.target).toBe(running.target);
    expect(routes.get(spec.deploymentId)?.unavailable).toBeUndefined();

    // The next gateway's serving, asked to remove the deployment, deletes its objects.
    const next = host();
    const again = next.start(spec);
    await until(() => api.openWatches >= 2, 'the next host watching');
    api.available(NS, name);
    const mine = await again;
    await mine.stop(0);
    for (const p of plurals) expect(api.get(p, NS, name), p).toBeUndefined();
  });

  it("reads its pods' output through the pod log API, line by line, as the revision's, from when it started it", async () => {
    const lines: string[] = [];
    const h = host((owner, stream, line) => lines.push(`${owner.deploymentId}/${owner.revisionId} ${stream} ${line}`));
    const before = new Date();
    const started = h.start(spec);
    await applied();
    await watching();
    // A waiting container has no log yet: nothing is asked of it.
    api.setPod(NS, name, `${name}-p1`, [
      { name: 'api-server', ready: false, state: { waiting: { reason: 'ContainerCreating' } } },
    ]);
    await new Promise((r) => setTimeout(r, 100));
    expect(api.logRequests).toEqual([]);
    api.writePodLog(NS, `${name}-p1`, 'loading graphs\n');
    api.setPod(NS, name, `${name}-p1`, [{ name: 'api-server', ready: true, restartCount: 0, state: { running: {} } }]);
    api.available(NS, name);
    const running = await started;
    await until(() => lines.length === 1, 'the first line');
    api.writePodLog(NS, `${name}-p1`, 'serving on 8000\npartial');
    api.writePodLog(NS, `${name}-p1`, ' line\n');
    await until(() => lines.length === 3, 'the next lines');
    expect(lines).toEqual([
      'dep-1/rev-1 stdout loading graphs',
      'dep-1/rev-1 stdout serving on 8000',
      'dep-1/rev-1 stdout partial line',
    ]);
    expect(api.logRequests).toHaveLength(1);
    expect(api.logRequests[0]!.query).toMatchObject({ container: 'api-server', follow: 'true' });
    expect(Date.parse(api.logRequests[0]!.query.sinceTime!)).toBeGreaterThanOrEqual(before.getTime() - 1000);
    await running.stop(0);
    api.writePodLog(NS, `${name}-p1`, 'after stop\n');
    await new Promise((r) => setTimeout(r, 100));
    expect(lines).toHaveLength(3);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../../../src/services/control-plane/store/secrets.ts';
import type { RevisionPodControl } from '../../../../src/services/revision-host/kubernetes/pod-contract.ts';
import { POD_ARGS, POD_HEALTH_PATH } from '../../../../src/services/revision-host/kubernetes/pod-contract.ts';
import { podVariables } from '../../../../src/services/revision-host/kubernetes/pod-env.ts';
import { revisionManifests } from '../../../../src/services/revision-host/kubernetes/manifests.ts';
import { revisionToken } from '../../../../src/services/revision-host/revision-token.ts';
import { freePort } from '../../../../support/redis-server.ts';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  TEST_SECRETS_KEY,
  type TestRepo,
} from '../../control-plane/helpers.ts';
import { startDeploymentsGateway, type DeploymentsGateway } from '../../deployments/deployments-gateway.ts';
import { BARE_APP, deployed } from '../../deployments/helpers.ts';

/**
 * The pod's exact command (`node bin/gateway.js revision-pod`, pod-contract.ts) run here as a local process with
 * exactly the pod's variables: first as the Kubernetes host's manifests describe it (the image's entrypoint and the
 * container's arguments, its env and Secret, its probe path), also served through the edge with the deployment's
 * route at it; then from pod-env.ts for the refusals. Pointed at a real gateway's internal listener (INTERNAL_PORT) on loopback:
 * it fetches the build the gateway made, checks it, unpacks it, serves it, and the unmodified SDK runs a graph on it
 * with the deployment's API key (checked by the gateway over HTTP). Only the port and app folder are overridden
 * (REVISION_POD_PORT, REVISION_POD_APP_DIR: /srv/revision and 8000 are the container's). The public edge in front of
 * the same gateway never answers `/internal/*` from those endpoints.
 */

const ROOT = new URL('../../../../', import.meta.url).pathname;
let g: DeploymentsGateway;
let repo: TestRepo;
let internalUrl: string;
let built: { deploymentId: string; revisionId: string; sha256: string; token: string };
const children: ChildProcess[] = [];
const folders: string[] = [];

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  const internalPort = await freePort();
  internalUrl = `http://127.0.0.1:${internalPort}`;
  g = await startDeploymentsGateway('revision-pod', { INTERNAL_PORT: String(internalPort) });
  const api = client(g.gw.url, g.tenant);
  const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
  await deployed(api, d.id, d.latest_revision_id);
  const [file] = readdirSync(join(g.workDir, 'artifacts')).filter((f) => f.endsWith('.tar.gz'));
  const tokenKey = new SecretBox(Buffer.from(TEST_SECRETS_KEY, 'base64')).derive('revision-tokens');
  built = {
    deploymentId: d.id,
    revisionId: d.latest_revision_id,
    sha256: file!.replace('.tar.gz', ''),
    token: revisionToken(tokenKey, { deploymentId: d.id, revisionId: d.latest_revision_id }),
  };
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await g?.close();
  repo?.remove();
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

function control(overrides: Partial<RevisionPodControl> = {}): RevisionPodControl {
  return {
    deploymentId: built.deploymentId,
    revisionId: built.revisionId,
    configPath: 'langgraph.json',
    sourcePrefix: '',
    org: g.tenant.org,
    dataPrefix: `pod-test:${built.deploymentId}`,
    logLevel: 'info',
    heartbeatMs: 10_000,
    ttlSweepMs: 60_000,
    webhookHostsAllowed: [],
    ...overrides,
  };
}

interface Pod {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exit: Promise<number | null>;
  output(): string;
}

/** The pod's command with its variables, the app's env (from its Secret) and the two test overrides only. */
async function startPod(
  vars: Record<string, string>,
  args: readonly string[] = ['bin/gateway.js', ...POD_ARGS],
): Promise<Pod> {
  const port = await freePort();
  const appDir = mkdtempSync(join(tmpdir(), 'revision-pod-'));
  folders.push(appDir);
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      ...vars,
      REVISION_POD_PORT: String(port),
      REVISION_POD_APP_DIR: appDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, url: `http://127.0.0.1:${port}`, exit, output: () => out };
}

/**
 * The pod exactly as the Kubernetes host's manifests describe it: the image's entrypoint (the Dockerfile's, after
 * `node`) and the container's arguments, its env and its Secret's data (the app's env and the token), its probe path.
 */
function podOfManifests(): { args: string[]; env: Record<string, string>; probePath: string } {
  const m = revisionManifests(
    {
      deploymentId: built.deploymentId,
      revisionId: built.revisionId,
      appDir: '/not-used-by-a-pod',
      configPath: 'langgraph.json',
      sourcePrefix: '',
      org: g.tenant.org,
      env: { GREETING: 'hello' },
      memoryMb: 512,
      dataPrefix: `pod-test:${built.deploymentId}`,
      artifact: { sha256: built.sha256, bytes: 0 },
    },
    {
      namespace: 'agents',
      image: 'agent-gateway:test',
      gatewayInternalUrl: internalUrl,
      clusterDomain: 'cluster.local',
      gatewayPodLabels: { 'app.kubernetes.io/name': 'agent-gateway' },
      egressCidrs: [],
      imagePullSecret: null,
      terminationGraceSeconds: 15,
      loadTimeoutSeconds: 60,
      control: { logLevel: 'info', heartbeatMs: 10_000, ttlSweepMs: 60_000, webhookHostsAllowed: [] },
    },
    built.token,
  );
  const container = m.deployment.spec!.template.spec!.containers[0]!;
  const entrypoint = /ENTRYPOINT (\[.*\])/.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1]!;
  const [node, ...flags] = JSON.parse(entrypoint) as string[];
  expect(node).toBe('node');
  const secret = Object.fromEntries(
    Object.entries(m.secret.data!).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
  const own = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));
  return {
    args: [...flags, ...(container.args ?? [])],
    env: { ...secret, ...own },
    probePath: container.readinessProbe!.httpGet!.path!,
  };
}

describe('gateway revision-pod, run here as the pod would run it', () => {
  it('as its manifests describe it: fetches and checks its build, serves it on its port (/ok), runs a graph through the SDK, and drains on SIGTERM', async () => {
    const described = podOfManifests();
    expect(described.probePath).toBe(POD_HEALTH_PATH);
    const pod = await startPod(described.env, described.args);
    await eventually(
      async () => {
        if (pod.child.exitCode !== null) throw new Error(`the pod exited ${pod.child.exitCode}: ${pod.output()}`);
        return (await fetch(pod.url + described.probePath).catch(() => null))?.ok;
      },
      60_000,
      'the pod answering /ok',
    );

    const sdk = new Client({ apiUrl: pod.url, apiKey: g.tenant.key });
    const thread = await sdk.threads.create();
    const values = (await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'hi' } })) as { answer?: string };
    expect(values.answer).toBe('v1 hello no-token: hi');

    // Served through the edge: the deployment's route at the pod (as a Service's address would be), its url.
    const routes = g.gw.gateway.routes;
    const before = routes.get(built.deploymentId)!;
    await routes.set({ ...before, target: pod.url });
    try {
      const d = (await client(g.gw.url, g.tenant).get(`/deployments/${built.deploymentId}`)).json;
      const viaEdge = new Client({ apiUrl: d.url, apiKey: g.tenant.key });
      const t2 = await viaEdge.threads.create();
      const v2 = (await viaEdge.runs.wait(t2.thread_id, 'echo', { input: { text: 'edge' } })) as { answer?: string };
      expect(v2.answer).toBe('v1 hello no-token: edge');
      // The thread is the pod's: the local process the route pointed at before has never seen it.
      expect(
        (await fetch(`${pod.url}/threads/${t2.thread_id}`, { headers: { 'x-api-key': g.tenant.key } })).status,
      ).toBe(200);
    } finally {
      await routes.set(before);
    }

    // A key of another organisation, or none the registry knows, is refused (the gateway answers the pod's checks).
    const other = await g.newTenant();
    for (const key of [other.key, 'gwk_made-up-key']) {
      const refused = new Client({ apiUrl: pod.url, apiKey: key });
      await expect(refused.threads.create()).rejects.toMatchObject({ status: expect.any(Number) });
      const res = await fetch(`${pod.url}/threads`, { method: 'POST', headers: { 'x-api-key': key } });
      expect([401, 403]).toContain(res.status);
    }

    pod.child.kill('SIGTERM');
    expect(await pod.exit).toBe(0);
  }, 120_000);

  it('refuses to start on a sha256 that is not its build’s: exit 2, one line, nothing unpacked', async () => {
    const wrong = 'e'.repeat(64);
    const vars = podVariables(internalUrl, { sha256: built.sha256, token: built.token, control: control() });
    const pod = await startPod({ ...vars, REVISION_ARTIFACT_SHA256: wrong });
    expect(await pod.exit).toBe(2);
    expect(pod.output()).toContain(`expected ${wrong}: refused, nothing unpacked`);
    expect(readdirSync(folders.at(-1)!)).toEqual([]);
  }, 60_000);

  it('a missing variable is one line naming it, exit 2', async () => {
    const vars = podVariables(internalUrl, { sha256: built.sha256, token: built.token, control: control() });
    delete vars.REVISION_TOKEN;
    const pod = await startPod(vars);
    expect(await pod.exit).toBe(2);
    expect(pod.output().trim()).toBe('gateway revision-pod: REVISION_TOKEN is not set');
  }, 60_000);

  it('the public edge never answers /internal/* from the internal endpoints, even with a valid token', async () => {
    const auth = { authorization: `Bearer ${built.token}` };
    const direct = await fetch(`${internalUrl}/internal/artifacts/${built.sha256}`, { headers: auth });
    expect(direct.status).toBe(200);
    await direct.arrayBuffer();
    const viaEdge = await fetch(`${g.gw.url}/internal/artifacts/${built.sha256}`, { headers: auth });
    const body = Buffer.from(await viaEdge.arrayBuffer());
    expect(viaEdge.status).not.toBe(200);
    expect(viaEdge.headers.get('content-type')).not.toBe('application/gzip');
    expect(body[0] === 0x1f && body[1] === 0x8b).toBe(false);
    const check = await fetch(`${g.gw.url}/internal/keys/check`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'x-api-key': g.tenant.key },
      body: JSON.stringify({ key: g.tenant.key }),
    });
    expect(check.status).not.toBe(200);
    expect(await check.text()).not.toContain('accepted');
  });
});

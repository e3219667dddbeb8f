/**
 * A revision's Kubernetes objects (manifests.ts): each validates against the Kubernetes JSON schemas
 * (`kubernetes-models`), in the wire form the client sends; the pod is locked down (non-root, read-only root, no
 * privilege escalation, no capabilities, RuntimeDefault seccomp, no service-account token); the Secret holds the
 * app's env and the revision's token; names are DNS-1035, ≤ 63 and stable; the NetworkPolicy lets the internet in
 * egress but not private ranges, except the operator's CIDRs.
 */
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import {
  PRIVATE_RANGES,
  revisionManifests,
  revisionObjectName,
  type ManifestSettings,
} from '../../../../src/services/revision-host/kubernetes/manifests.ts';
import { POD_ENV } from '../../../../src/services/revision-host/kubernetes/pod-contract.ts';
import type { RevisionSpec } from '../../../../src/services/revision-host/revision-host.ts';

const spec: RevisionSpec = {
  deploymentId: '0f8c2a1e-7b4d-4c1a-9e0f-1234567890ab',
  revisionId: '9a7b6c5d-4e3f-4a1b-8c2d-abcdefabcdef',
  appDir: '/nowhere',
  configPath: 'apps/agent/langgraph.json',
  sourcePrefix: 'apps/agent',
  org: 'acme',
  env: { OPENAI_API_KEY: 'sk-test', MODE: 'prod' },
  memoryMb: 512,
  dataPrefix: 'd:0f8c',
  artifact: { sha256: 'b'.repeat(64), bytes: 1234 },
};
const settings: ManifestSettings = {
  namespace: 'agents',
  image: 'registry.example/agent-gateway:1.2.3',
  gatewayInternalUrl: 'http://agent-gateway-internal.agents.svc:8081',
  clusterDomain: 'cluster.local',
  gatewayPodLabels: { 'app.kubernetes.io/name': 'agent-gateway' },
  egressCidrs: ['10.20.0.5/32'],
  imagePullSecret: 'registry-pull',
  terminationGraceSeconds: 15,
  loadTimeoutSeconds: 60,
  control: { logLevel: 'info', heartbeatMs: 10_000, ttlSweepMs: 60_000, webhookHostsAllowed: [] },
};
const m = revisionManifests(spec, settings, 'the-token');

/** The wire form: the client's models name `from` as `_from` (its serializer renames it). */
function wire(o: unknown): unknown {
  if (Array.isArray(o)) return o.map(wire);
  if (o === null || typeof o !== 'object') return o;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k === '_from' ? 'from' : k, wire(v)]));
}

describe('revisionManifests', () => {
  it('every object validates against the Kubernetes schemas', () => {
    expect(JSON.stringify(wire(m))).not.toMatch(/"_[a-z]/);
    expect(() => new Secret(wire(m.secret) as never).validate()).not.toThrow();
    expect(() => new Deployment(wire(m.deployment) as never).validate()).not.toThrow();
    expect(() => new Service(wire(m.service) as never).validate()).not.toThrow();
    expect(() => new NetworkPolicy(wire(m.networkPolicy) as never).validate()).not.toThrow();
  });

  it('the schema check does catch a wrong object', () => {
    const bad = wire(m.deployment) as { spec: { replicas: unknown } };
    bad.spec.replicas = 'one';
    expect(() => new Deployment(bad as never).validate()).toThrow();
  });

  it('names are DNS-1035, at most 63 characters, stable, and the target is the Service address', () => {
    const long = revisionObjectName('x'.repeat(200), 'Y-'.repeat(100));
    for (const n of [m.name, long]) {
      expect(n).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
      expect(n.length).toBeLessThanOrEqual(63);
    }
    expect(revisionObjectName(spec.deploymentId, spec.revisionId)).toBe(m.name);
    expect(revisionObjectName(spec.deploymentId, 'other')).not.toBe(m.name);
    expect(m.target).toBe(`http://${m.name}.agents.svc.cluster.local:8000`);
    for (const o of [m.secret, m.deployment, m.service, m.networkPolicy]) {
      expect(o.metadata?.name).toBe(m.name);
      expect(o.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'agent-gateway' });
    }
  });

  it('the pod is locked down and bounded', () => {
    const pod = m.deployment.spec!.template.spec!;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.enableServiceLinks).toBe(false);
    expect(pod.terminationGracePeriodSeconds).toBe(15);
    expect(pod.imagePullSecrets).toEqual([{ name: 'registry-pull' }]);
    const c = pod.containers[0]!;
    expect(c.name).toBe('api-server');
    expect(c.image).toBe(settings.image);
    expect(c.args).toEqual(['revision-pod']);
    expect(c.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(c.resources?.limits).toEqual({ memory: '768Mi', cpu: '1' });
    expect(c.readinessProbe?.httpGet).toEqual({ path: '/ok', port: 8000 });
    expect(c.livenessProbe?.httpGet).toEqual({ path: '/ok', port: 8000 });
    expect(c.startupProbe?.httpGet).toEqual({ path: '/ok', port: 8000 });
    expect(c.envFrom).toEqual([{ secretRef: { name: m.name } }]);
    expect(pod.volumes?.every((v) => v.emptyDir?.sizeLimit !== undefined)).toBe(true);
    expect(m.deployment.spec!.revisionHistoryLimit).toBe(0);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
    expect(env[POD_ENV.artifactUrl]).toBe(`${settings.gatewayInternalUrl}/internal/artifacts/${'b'.repeat(64)}`);
    expect(env[POD_ENV.keyCheckUrl]).toBe(`${settings.gatewayInternalUrl}/internal/keys/check`);
    expect(JSON.parse(env[POD_ENV.control]!)).toMatchObject({ configPath: spec.configPath, org: 'acme' });
    expect(env[POD_ENV.token]).toBeUndefined(); // Only in the Secret.
    expect(JSON.stringify(c.env)).not.toContain('sk-test');
  });

  it('the Secret holds the app env and the revision token', () => {
    const data = Object.fromEntries(
      Object.entries(m.secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(data).toEqual({ OPENAI_API_KEY: 'sk-test', MODE: 'prod', [POD_ENV.token]: 'the-token' });
  });

  it('the NetworkPolicy: ingress from the gateway only; egress DNS, the gateway, the internet minus private ranges, the operator CIDRs', () => {
    const p = m.networkPolicy.spec!;
    expect(p.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(p.ingress).toEqual([
      {
        _from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'agent-gateway' } } }],
        ports: [{ port: 8000, protocol: 'TCP' }],
      },
    ]);
    const blocks = (p.egress ?? []).flatMap((r) => (r.to ?? []).map((t) => t.ipBlock)).filter((b) => b !== undefined);
    expect(blocks).toContainEqual({ cidr: '0.0.0.0/0', except: PRIVATE_RANGES });
    expect(PRIVATE_RANGES).toEqual([
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '169.254.0.0/16',
      '100.64.0.0/10',
    ]);
    expect(blocks).toContainEqual({ cidr: '10.20.0.5/32' });
    expect(JSON.stringify(p.egress)).toContain('"port":53');
  });
});

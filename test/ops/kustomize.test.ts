import { describe, expect, it } from 'vitest';
import { find, gatewayDeployment, OVERLAYS, render, validate, type Overlay } from './kustomize-render.ts';

/**
 * Issue 37, items 3 and 4: the Kubernetes kit says one consistent thing. Each overlay renders with `kubectl
 * kustomize` (no cluster), every object it renders is valid against the Kubernetes schemas (kubernetes-models: types
 * and required fields; it does not refuse unknown fields), and the replica counts agree with what each revision host
 * allows: several with the Kubernetes host and the edge tier, exactly one with the local host.
 */
type Obj = Record<string, any>;

const ROLE_RULES = [
  {
    apiGroups: ['apps'],
    resources: ['deployments'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
  },
  {
    apiGroups: [''],
    resources: ['services', 'secrets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
  },
  {
    apiGroups: ['networking.k8s.io'],
    resources: ['networkpolicies'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
  },
  { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];

/** (group, resource, verb) triples of a Role's rules: the same permissions however the rules are grouped. */
const grants = (rules: Obj[]): string[] =>
  rules
    .flatMap((r) =>
      (r.apiGroups as string[]).flatMap((g) =>
        (r.resources as string[]).flatMap((res) => (r.verbs as string[]).map((v) => `${g}/${res}:${v}`)),
      ),
    )
    .sort();

const env = (deployment: Obj): Record<string, Obj> =>
  Object.fromEntries((deployment.spec.template.spec.containers[0].env as Obj[]).map((e) => [e.name as string, e]));

/** The pod templates of an overlay's workloads (today: the gateway's Deployment). */
const podSpecs = (objects: Obj[]): [string, Obj][] =>
  objects.filter((o) => o.spec?.template?.spec).map((o) => [`${o.kind} ${o.metadata.name}`, o.spec.template.spec]);

describe.each(OVERLAYS)('kubectl kustomize deploy/kubernetes/overlays/%s', (overlay: Overlay) => {
  it('renders, and every object is valid against its kind’s schema', () => {
    const objects = render(overlay);
    expect(objects.length).toBeGreaterThan(2);
    for (const o of objects) expect(() => validate(o), `${o.kind} ${o.metadata?.name}`).not.toThrow();
    expect(find(objects, 'ConfigMap', 'gateway-rules')).toBeDefined();
    // The example Secret is made by hand, never applied by an overlay.
    expect(find(objects, 'Secret')).toBeUndefined();
  });

  it('every container has requests and limits, admin-listener probes and a restricted securityContext', () => {
    for (const [where, spec] of podSpecs(render(overlay))) {
      expect(spec.securityContext, where).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
      const admin = 9090;
      for (const c of spec.containers as Obj[]) {
        const at = `${where} ${c.name}`;
        expect(c.resources?.requests, at).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
        expect(c.resources?.limits?.memory, at).toEqual(expect.any(String));
        expect(c.securityContext, at).toMatchObject({
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.securityContext.privileged, at).toBeFalsy();
        // The runtime's seccomp profile, but for the local host's sandbox (bwrap calls unshare): see its overlay.
        const seccomp = c.securityContext.seccompProfile?.type ?? spec.securityContext.seccompProfile?.type;
        expect(seccomp, at).toBe(overlay === 'local-host' ? 'Unconfined' : 'RuntimeDefault');
        const adminPort = (c.ports as Obj[]).find((p) => p.containerPort === admin);
        for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
          expect(c[probe]?.httpGet?.port, `${at} ${probe}`).toBe(adminPort?.name);
      }
    }
  });

  it('replicas and autoscaler only where the revision host allows them', () => {
    const objects = render(overlay);
    const deployment = gatewayDeployment(overlay);
    const hpa = find(objects, 'HorizontalPodAutoscaler');
    const expected = env(deployment).EXPECTED_INSTANCES?.value as string;
    if (overlay === 'local-host') {
      expect(deployment.spec.replicas).toBe(1);
      expect(hpa).toBeUndefined();
      expect(find(objects, 'PodDisruptionBudget')).toBeUndefined();
      expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
      expect(expected).toBe('1');
      expect(env(deployment).REVISION_HOST?.value ?? 'local').toBe('local');
    } else {
      expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
      expect(hpa?.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
      expect(hpa?.spec.minReplicas).toBe(deployment.spec.replicas);
      expect(hpa?.spec.maxReplicas).toBeGreaterThan(hpa?.spec.minReplicas);
      expect(Number(expected)).toBe(deployment.spec.replicas);
      const pdb = find(objects, 'PodDisruptionBudget');
      expect(pdb?.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    }
  });

  it('the Services select the gateway’s pods, which are labelled app.kubernetes.io/name: agent-gateway', () => {
    const deployment = gatewayDeployment(overlay);
    expect(deployment.spec.template.metadata.labels['app.kubernetes.io/name']).toBe('agent-gateway');
    const containerPorts = (deployment.spec.template.spec.containers[0].ports as Obj[]).map((p) => p.name as string);
    for (const service of render(overlay).filter((o) => o.kind === 'Service')) {
      expect(service.spec.selector, service.metadata.name).toEqual(deployment.spec.selector.matchLabels);
      for (const p of service.spec.ports as Obj[])
        expect(containerPorts, service.metadata.name).toContain(p.targetPort);
    }
  });
});

describe('overlays/kubernetes-host', () => {
  const objects = () => render('kubernetes-host');
  const deployment = () => gatewayDeployment('kubernetes-host');

  it('the Role grants exactly what the Kubernetes host does, and is bound to the Deployment’s ServiceAccount', () => {
    const role = find(objects(), 'Role', 'agent-gateway');
    expect(grants(role?.rules as Obj[])).toEqual(grants(ROLE_RULES));
    expect(objects().filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')).toEqual([]);
    const account = deployment().spec.template.spec.serviceAccountName as string;
    expect(find(objects(), 'ServiceAccount', account)).toBeDefined();
    expect(deployment().spec.template.spec.automountServiceAccountToken).toBe(true);
    const binding = objects().find((o) => o.kind === 'RoleBinding' && o.roleRef.name === role?.metadata.name);
    expect(binding?.roleRef).toMatchObject({ kind: 'Role', apiGroup: 'rbac.authorization.k8s.io' });
    expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: account }]);
  });

  it('REVISION_HOST=kubernetes, revisions in its own namespace running its own image, and the internal listener', () => {
    const e = env(deployment());
    const container = deployment().spec.template.spec.containers[0] as Obj;
    expect(e.REVISION_HOST?.value).toBe('kubernetes');
    expect(e.KUBERNETES_NAMESPACE?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
    expect(e.REVISION_IMAGE?.value).toBe(container.image);
    const internalPort = Number(e.INTERNAL_PORT?.value);
    const port = (container.ports as Obj[]).find((p) => p.containerPort === internalPort);
    expect(port?.name).toEqual(expect.any(String));
    // GATEWAY_INTERNAL_URL names a Service of the kit on that port.
    const url = new URL(e.GATEWAY_INTERNAL_URL?.value as string);
    const service = find(objects(), 'Service', url.hostname);
    expect(service?.spec.ports).toContainEqual(
      expect.objectContaining({ port: Number(url.port), targetPort: port?.name }),
    );
  });

  it('every replica mounts one ReadWriteMany claim at ARTIFACTS_DIR (a pod fetches its artifact from any replica)', () => {
    const dir = env(deployment()).ARTIFACTS_DIR?.value as string;
    const container = deployment().spec.template.spec.containers[0] as Obj;
    const mount = (container.volumeMounts as Obj[]).find((m) => m.mountPath === dir);
    const volume = (deployment().spec.template.spec.volumes as Obj[]).find((v) => v.name === mount?.name);
    const claim = find(objects(), 'PersistentVolumeClaim', volume?.persistentVolumeClaim?.claimName as string);
    expect(claim?.spec.accessModes).toEqual(['ReadWriteMany']);
  });

  it('the NetworkPolicy lets revision pods reach the internal port of the gateway and nothing else of it', () => {
    const policy = objects().find((o) => o.kind === 'NetworkPolicy') as Obj;
    expect(policy.spec.podSelector.matchLabels).toEqual(deployment().spec.selector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    const revisionPod = { 'app.kubernetes.io/managed-by': 'agent-gateway' };
    const otherPod = { 'app.kubernetes.io/name': 'ingress-nginx' };
    const internal = Number(env(deployment()).INTERNAL_PORT?.value);
    const admits = (labels: Record<string, string>): number[] =>
      (policy.spec.ingress as Obj[])
        .filter((rule) => (rule.from as Obj[]).some((peer) => selects(peer.podSelector, labels)))
        .flatMap((rule) => (rule.ports as Obj[]).map((p) => p.port as number));
    expect(admits(revisionPod)).toEqual([internal]);
    expect(admits(otherPod).sort()).toEqual([8080, 9090]);
  });
});

/** Whether a label selector (matchLabels, and matchExpressions with In / NotIn / Exists) selects `labels`. */
function selects(selector: Obj | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  const byLabel = Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(
    ([k, v]) => labels[k] === v,
  );
  const byExpression = ((selector.matchExpressions ?? []) as Obj[]).every((e) => {
    const value = labels[e.key as string];
    if (e.operator === 'In') return value !== undefined && (e.values as string[]).includes(value);
    if (e.operator === 'NotIn') return value === undefined || !(e.values as string[]).includes(value);
    if (e.operator === 'Exists') return value !== undefined;
    throw new Error(`operator ${e.operator} not understood here`);
  });
  return byLabel && byExpression;
}

describe('overlays/local-host and edge-only', () => {
  it('local-host: the builds on a claim of the kit, and what bwrap needs (a user namespace, /proc unmasked)', () => {
    const spec = gatewayDeployment('local-host').spec.template.spec as Obj;
    const builds = (spec.volumes as Obj[]).find((v) => v.name === 'builds');
    expect(find(render('local-host'), 'PersistentVolumeClaim', builds?.persistentVolumeClaim?.claimName)).toBeDefined();
    const mount = (spec.containers[0].volumeMounts as Obj[]).find((m) => m.name === 'builds');
    expect(env(gatewayDeployment('local-host')).BUILD_WORK_DIR?.value).toBe(mount?.mountPath);
    expect(spec.hostUsers).toBe(false);
    expect(spec.containers[0].securityContext.procMount).toBe('Unmasked');
  });

  it('edge-only: CONTROL_PLANE_URL and AGENT_SERVER_URL, no database, no builds, no ServiceAccount token', () => {
    const d = gatewayDeployment('edge-only');
    const e = env(d);
    for (const name of ['CONTROL_PLANE_URL', 'AGENT_SERVER_URL'])
      expect(new URL(e[name]?.value as string).protocol, name).toMatch(/^https?:$/);
    for (const name of ['DATABASE_URI', 'DEPLOYMENTS_DATABASE_URI', 'BUILD_WORK_DIR', 'REVISION_HOST'])
      expect(e[name], name).toBeUndefined();
    expect(d.spec.template.spec.automountServiceAccountToken).toBe(false);
  });
});

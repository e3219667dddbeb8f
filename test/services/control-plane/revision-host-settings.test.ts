/**
 * REVISION_HOST and the Kubernetes host's settings: `local` by default; with `kubernetes`, REVISION_IMAGE and
 * GATEWAY_INTERNAL_URL are required (one line naming each), the namespace comes from the pod's own when unset,
 * egress CIDRs and the gateway's pod labels are checked.
 */
import { describe, expect, it } from 'vitest';
import { loadRevisionHostSettings } from '../../../src/services/control-plane/revision-host-settings.ts';

const k8s = {
  REVISION_HOST: 'kubernetes',
  REVISION_IMAGE: 'registry.example/agent-gateway:1',
  GATEWAY_INTERNAL_URL: 'http://agent-gateway-internal.agents.svc:8081/',
};

describe('loadRevisionHostSettings', () => {
  it('is local by default', () => {
    expect(loadRevisionHostSettings({})).toEqual({ kind: 'local' });
  });

  it('reads the Kubernetes host, the namespace from the pod when unset', () => {
    expect(
      loadRevisionHostSettings({ ...k8s, REVISION_EGRESS_CIDRS: '10.0.12.0/24, 10.0.13.7/32' }, () => 'agents'),
    ).toEqual({
      kind: 'kubernetes',
      namespace: 'agents',
      image: k8s.REVISION_IMAGE,
      gatewayInternalUrl: 'http://agent-gateway-internal.agents.svc:8081',
      clusterDomain: 'cluster.local',
      egressCidrs: ['10.0.12.0/24', '10.0.13.7/32'],
      imagePullSecret: null,
      gatewayPodLabels: { 'app.kubernetes.io/name': 'agent-gateway' },
    });
    expect(loadRevisionHostSettings(k8s, () => null)).toMatchObject({ namespace: 'default' });
    expect(loadRevisionHostSettings({ ...k8s, KUBERNETES_NAMESPACE: 'x' }, () => 'agents')).toMatchObject({
      namespace: 'x',
    });
  });

  it('names a missing or invalid setting in one line', () => {
    expect(() => loadRevisionHostSettings({ ...k8s, REVISION_IMAGE: '' })).toThrow(
      /^REVISION_IMAGE: required with REVISION_HOST=kubernetes/,
    );
    expect(() => loadRevisionHostSettings({ ...k8s, GATEWAY_INTERNAL_URL: undefined })).toThrow(
      /^GATEWAY_INTERNAL_URL: required/,
    );
    expect(() => loadRevisionHostSettings({ ...k8s, GATEWAY_INTERNAL_URL: 'ftp://x' })).toThrow(
      /^GATEWAY_INTERNAL_URL: must be/,
    );
    expect(() => loadRevisionHostSettings({ ...k8s, REVISION_EGRESS_CIDRS: '10.0.0.1' })).toThrow(
      /^REVISION_EGRESS_CIDRS: "10.0.0.1" is not a CIDR/,
    );
    expect(() => loadRevisionHostSettings({ ...k8s, GATEWAY_POD_LABELS: 'nolabel' })).toThrow(/^GATEWAY_POD_LABELS: /);
    expect(() => loadRevisionHostSettings({ REVISION_HOST: 'docker' })).toThrow(/^REVISION_HOST: /);
  });
});

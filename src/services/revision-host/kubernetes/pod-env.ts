import { POD_ENV, type RevisionPodControl } from './pod-contract.ts';

/**
 * The pod's own variables (POD_ENV) both ways: made for a revision (what the host's manifests put in its Secret and
 * container; a test runs the pod's command with exactly these) and read back by the pod's entry (pod-main.ts), which
 * refuses a missing or malformed one in one line naming it.
 */
export interface PodVariables {
  readonly artifactUrl: string;
  readonly artifactSha256: string;
  readonly keyCheckUrl: string;
  readonly token: string;
  readonly control: RevisionPodControl;
}

export class PodEnvError extends Error {
  constructor(variable: string, why: string) {
    super(`${variable} ${why}`);
    this.name = 'PodEnvError';
  }
}

/** The variables of a revision's pod, from where the gateway's internal endpoints answer (`internalUrl`). */
export function podVariables(
  internalUrl: string,
  r: { readonly sha256: string; readonly token: string; readonly control: RevisionPodControl },
): Record<string, string> {
  const base = internalUrl.replace(/\/+$/, '');
  return {
    [POD_ENV.artifactUrl]: `${base}/internal/artifacts/${r.sha256}`,
    [POD_ENV.artifactSha256]: r.sha256,
    [POD_ENV.keyCheckUrl]: `${base}/internal/keys/check`,
    [POD_ENV.token]: r.token,
    [POD_ENV.control]: JSON.stringify(r.control),
  };
}

/** The pod's variables from its environment; a PodEnvError naming the first one missing or malformed. */
export function readPodVariables(env: NodeJS.ProcessEnv): PodVariables {
  const need = (name: string) => {
    const value = env[name];
    if (value === undefined || value === '') throw new PodEnvError(name, 'is not set');
    return value;
  };
  const url = (name: string) => {
    const value = need(name);
    if (!/^https?:\/\//.test(value) || !URL.canParse(value)) throw new PodEnvError(name, 'is not an http(s) URL');
    return value;
  };
  const artifactSha256 = need(POD_ENV.artifactSha256);
  if (!/^[0-9a-f]{64}$/.test(artifactSha256)) throw new PodEnvError(POD_ENV.artifactSha256, 'is not a sha256 (hex)');
  let control: unknown;
  try {
    control = JSON.parse(need(POD_ENV.control));
  } catch (err) {
    if (err instanceof PodEnvError) throw err;
    throw new PodEnvError(POD_ENV.control, 'is not JSON');
  }
  return {
    artifactUrl: url(POD_ENV.artifactUrl),
    artifactSha256,
    keyCheckUrl: url(POD_ENV.keyCheckUrl),
    token: need(POD_ENV.token),
    control: checkedControl(control),
  };
}

function checkedControl(c: unknown): RevisionPodControl {
  const bad = (field: string) => new PodEnvError(POD_ENV.control, `has no valid ${field}`);
  if (c === null || typeof c !== 'object') throw bad('object');
  const o = c as Record<string, unknown>;
  for (const f of ['deploymentId', 'revisionId', 'configPath', 'sourcePrefix', 'dataPrefix', 'logLevel'])
    if (typeof o[f] !== 'string') throw bad(f);
  if (o.org !== null && typeof o.org !== 'string') throw bad('org');
  for (const f of ['heartbeatMs', 'ttlSweepMs']) if (typeof o[f] !== 'number' || !(Number(o[f]) >= 0)) throw bad(f);
  if (!Array.isArray(o.webhookHostsAllowed) || o.webhookHostsAllowed.some((h) => typeof h !== 'string'))
    throw bad('webhookHostsAllowed');
  const configPath = o.configPath as string;
  if (configPath.startsWith('/') || configPath.split('/').includes('..')) throw bad('configPath (inside the artifact)');
  return o as unknown as RevisionPodControl;
}

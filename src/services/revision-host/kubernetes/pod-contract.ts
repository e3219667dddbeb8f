/**
 * What a revision's pod runs and is told: the one definition the host's manifests (manifests.ts) and the pod's entry
 * (`gateway revision-pod`, pod-main.ts) share. The pod runs the gateway's own image with the arguments below; it
 * fetches its build (an artifact: a gzipped tar the gateway serves, checked against its sha256) into an emptyDir,
 * loads the app's Agent Server and serves it on POD_PORT (probes on POD_HEALTH_PATH). API keys are checked by the
 * gateway over HTTP with the revision's own token, never by a registry credential in the pod.
 */
export const POD_PORT = 8000;
export const POD_HEALTH_PATH = '/ok';
/** The container's arguments after the image's entrypoint (`node --max-semi-space-size=64 bin/gateway.js`). */
export const POD_ARGS = ['revision-pod'] as const;
/** Where the artifact is unpacked (an emptyDir: the root filesystem is read-only). */
export const POD_APP_DIR = '/srv/revision';
/** A writable /tmp (an emptyDir bounded by the memory limit): tsx's cache and the app's temporary files. */
export const POD_TMP_DIR = '/tmp';

/** The variables the host sets on the container; the app's env and secrets come beside them from its Secret. */
export const POD_ENV = {
  /** Where the pod fetches its build: `<gateway internal URL>/internal/artifacts/<sha256>`. */
  artifactUrl: 'REVISION_ARTIFACT_URL',
  /** The artifact's sha256 (hex): a download that does not match is refused and the pod exits. */
  artifactSha256: 'REVISION_ARTIFACT_SHA256',
  /** Where the pod asks whether an API key belongs to its organisation: `<gateway internal URL>/internal/keys/check`. */
  keyCheckUrl: 'REVISION_KEY_CHECK_URL',
  /** The revision's bearer token for those two endpoints (from its Secret; HMAC of the revision id, see tokens). */
  token: 'REVISION_TOKEN',
  /** JSON of RevisionPodControl: which deployment and revision, the app config's path in the artifact, org, settings. */
  control: 'REVISION_CONTROL',
} as const;

/** What the pod is told in `REVISION_CONTROL` (the local host's `start` message, minus what a pod does not need). */
export interface RevisionPodControl {
  readonly deploymentId: string;
  readonly revisionId: string;
  /** The app config's path inside the artifact, e.g. `langgraph.json` or `apps/agent/langgraph.json`. */
  readonly configPath: string;
  /** The config's folder inside the repository ('' at its root), for the paths of compile errors. */
  readonly sourcePrefix: string;
  readonly org: string | null;
  /** Prefix of the Agent Server's data in Redis, when it has Redis. */
  readonly dataPrefix: string;
  readonly logLevel: string;
  readonly heartbeatMs: number;
  readonly ttlSweepMs: number;
  readonly webhookHostsAllowed: readonly string[];
}

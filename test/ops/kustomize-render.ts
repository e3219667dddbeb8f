import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as core from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';

/**
 * The Kubernetes kit as `kubectl kustomize` renders each overlay (kubectl's client alone: no cluster), and each
 * rendered object checked against the Kubernetes API's schemas by the `kubernetes-models` class of its kind.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const OVERLAYS = ['kubernetes-host', 'local-host', 'edge-only'] as const;
export type Overlay = (typeof OVERLAYS)[number];

type Obj = Record<string, any>; // rendered manifests: read as the tests walk them

const cache = new Map<Overlay, Obj[]>();

/** The overlay's objects, in kustomize's order. */
export function render(overlay: Overlay): Obj[] {
  const hit = cache.get(overlay);
  if (hit) return hit;
  let text: string;
  try {
    text = execFileSync('kubectl', ['kustomize', join(ROOT, 'deploy/kubernetes/overlays', overlay)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('kubectl not found: the kit tests need its client (no cluster)');
    throw new Error(`kubectl kustomize overlays/${overlay}: ${e.stderr?.trim() ?? e.message}`);
  }
  const objects = parseAllDocuments(text).map((doc) => doc.toJS() as Obj);
  cache.set(overlay, objects);
  return objects;
}

/** The object of `kind` named `name` (the first of its kind without a name), or undefined. */
export function find(objects: Obj[], kind: string, name?: string): Obj | undefined {
  return objects.find((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
}

/** The gateway's Deployment of an overlay. */
export function gatewayDeployment(overlay: Overlay): Obj {
  const d = find(render(overlay), 'Deployment', 'agent-gateway');
  if (!d) throw new Error(`${overlay}: no Deployment agent-gateway`);
  return d;
}

type Model = new (data: any) => { validate(): void };

/** The schema classes of the API groups the kit uses, by apiVersion. */
const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  'apps/v1': apps,
  'autoscaling/v2': autoscaling,
  'networking.k8s.io/v1': networking,
  'policy/v1': policy,
  'rbac.authorization.k8s.io/v1': rbac,
};

/** Validates `object` against its kind's schema; throws the schema's first complaint, or for a kind not known here. */
export function validate(object: Obj): void {
  const Kind = MODELS[object.apiVersion as string]?.[object.kind as string] as Model | undefined;
  if (!Kind) throw new Error(`no schema here for ${object.apiVersion} ${object.kind}`);
  new Kind(object).validate();
}

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { gatewayDeployment, OVERLAYS, type Overlay } from './kustomize-render.ts';

/**
 * The operations kit as the tests read it (compose.yaml, deploy/): each file parsed, and what the tests check in them
 * pulled out (environments, probe paths, metric names of PromQL expressions, the variables the gateway reads).
 */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Every file of the kit, relative to the repository. */
export function kitFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
    );
  return ['compose.yaml', ...walk('deploy')];
}

/** A YAML file's documents; throws on the first error of any of them. */
export function yamlDocuments(path: string): unknown[] {
  return parseAllDocuments(read(path)).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]!.message}`);
    return doc.toJS() as unknown;
  });
}

type Obj = Record<string, any>; // parsed manifests: read as the tests walk them

export const compose = (): Obj => parse(read('compose.yaml')) as Obj;
/** A file of deploy/kubernetes/ (e.g. `base/secret.example.yaml`), parsed. */
export const manifest = (file: string): Obj => parse(read(join('deploy/kubernetes', file))) as Obj;
/**
 * The gateway's container as an overlay renders it; by default local-host's, the one a gateway runs here as it is
 * (the Kubernetes host needs a cluster, the edge tier a control plane elsewhere).
 */
export const gatewayContainer = (overlay: Overlay = 'local-host'): Obj =>
  gatewayDeployment(overlay).spec.template.spec.containers[0] as Obj;

/** The compose gateway's `environment`, values as strings. */
export function composeEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(compose().services.gateway.environment as Obj).map(([k, v]) => [k, String(v)]),
  );
}

/**
 * An overlay's Deployment env: literal values, the names taken from the Secret, and those from the pod's own fields
 * (the downward API: KUBERNETES_NAMESPACE).
 */
export function deploymentEnv(overlay: Overlay = 'local-host'): {
  values: Record<string, string>;
  fromSecret: string[];
  fromField: string[];
} {
  const env = gatewayContainer(overlay).env as { name: string; value?: string; valueFrom?: Obj }[];
  return {
    values: Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, String(e.value)])),
    fromSecret: env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name),
    fromField: env.filter((e) => e.valueFrom?.fieldRef).map((e) => e.name),
  };
}

export { OVERLAYS, type Overlay };

/** The keys of gateway.env the compose file's comment tells how to make. */
export function composeSecretNames(): string[] {
  const printf = /printf '([^']*)'/.exec(read('compose.yaml'))?.[1] ?? '';
  return [...printf.matchAll(/([A-Z_]+)=%s/g)].map((m) => m[1]!);
}

/** Each HTTP probe of the kit: where it is declared, the port it names, its path. */
export function probes(): { where: string; port: string | number; path: string }[] {
  const c = gatewayContainer();
  const k8s = ['startupProbe', 'livenessProbe', 'readinessProbe']
    .filter((p) => c[p])
    .map((p) => ({ where: `deployment ${p}`, port: c[p].httpGet.port as string, path: c[p].httpGet.path as string }));
  const test = (compose().services.gateway.healthcheck.test as string[]).join(' ');
  const dockerfile = /^HEALTHCHECK .*$/m.exec(read('Dockerfile'))?.[0] ?? '';
  const urls = [
    ...[...test.matchAll(/http:\/\/127\.0\.0\.1:(\d+)(\/[a-z]+)/g)].map((m) => ({
      where: 'compose healthcheck',
      port: Number(m[1]),
      path: m[2]!,
    })),
    ...[...dockerfile.matchAll(/'(\/[a-z]+)'/g)].map((m) => ({
      where: 'Dockerfile HEALTHCHECK',
      port: 9090,
      path: m[1]!,
    })),
  ];
  return [...k8s, ...urls];
}

/** The PromQL expressions of the dashboard's panels and of the alert rules. */
export function promqlExpressions(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(read('deploy/grafana/gateway.json')) as Obj;
  const panels = (dashboard.panels as Obj[]).flatMap((p) =>
    ((p.targets ?? []) as Obj[]).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr as string })),
  );
  const variables = (dashboard.templating.list as Obj[])
    .filter((v) => typeof v.definition === 'string')
    .map((v) => ({ where: `variable ${v.name}`, expr: v.definition as string }));
  const alerts = (parse(read('deploy/prometheus/alerts.yaml')) as Obj).groups.flatMap((g: Obj) =>
    (g.rules as Obj[]).map((r) => ({ where: `alert ${r.alert}`, expr: r.expr as string })),
  ) as { where: string; expr: string }[];
  return [...panels, ...variables, ...alerts];
}

/** The metric names an expression reads: the gateway's own (`gateway_` prefix); label names never start so. */
export function metricNames(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\bgateway_[a-z0-9_]+/g)].map((m) => m[0]))];
}

/** `name` as the family /metrics declares (`# TYPE`): a histogram's _bucket, _sum and _count are its own. */
export function family(name: string, types: ReadonlyMap<string, string>): string {
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  return m && types.get(m[1]!) === 'histogram' ? m[1]! : name;
}

/** `# TYPE <name> <type>` of a /metrics text. */
export function declaredMetrics(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/**
 * The environment variables the gateway reads: the names its settings loaders pass to the env readers, read from
 * their sources (src/settings/*.ts and each service's settings.ts), as quoted upper-case names.
 */
export function knownVariables(): Set<string> {
  const files = [
    ...readdirSync(join(ROOT, 'src/settings')).map((f) => join('src/settings', f)),
    // Each service's settings loaders: `settings.ts` and any `*-settings.ts` beside it.
    ...readdirSync(join(ROOT, 'src/services'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .flatMap((e) =>
        readdirSync(join(ROOT, 'src/services', e.name))
          .filter((f) => f === 'settings.ts' || f.endsWith('-settings.ts'))
          .map((f) => join('src/services', e.name, f)),
      ),
  ].filter((f) => f.endsWith('.ts'));
  return new Set(files.flatMap((f) => [...read(f).matchAll(/'([A-Z][A-Z0-9_]{2,})'/g)].map((m) => m[1]!)));
}

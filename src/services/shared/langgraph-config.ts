import { jsonErrorPosition } from './json-error-position.ts';
import { uiOf, type UiConfig, type UiProblem } from './langgraph-ui-config.ts';

/**
 * The app config format (`langgraph.json` in the public platform), parsed once for the control plane's build and the
 * Agent Server: JSON, `graphs` mapping each graph name to `<file>:<export>` (or to `{"path": "<file>:<export>"}`), and
 * an optional `auth.path` as `<file>:<export>` or `<file>` (its default export), an optional `env` (a map of variable
 * to string value, or the path of a `.env` file), an optional `http` (`app`: `<file>:<export>` of a Hono app;
 * `configurable_headers`: `include` / `exclude` lists of header patterns; `cors`; `disable_assistants`, `disable_threads`,
 * `disable_runs`, `disable_store`, `disable_meta`), a graph's optional `description`, and `ui` / `ui_config`
 * (langgraph-ui-config.ts).
 *
 * Only the format lives here. Where files resolve and what counts as a file (inside the checkout for a build, anywhere
 * on the host for the Agent Server) is each caller's, and so are its error type and messages: every problem reaches
 * the caller as a ConfigProblem, in document order, and the caller turns it into its own error.
 */
export type ConfigProblem =
  /** `detail`: where the text stops being JSON (`line 1, column 1`), never any of its content. */
  | { readonly kind: 'not-json'; readonly detail: string }
  | { readonly kind: 'not-object' }
  | { readonly kind: 'graphs-missing' }
  | { readonly kind: 'graphs-not-object' }
  | { readonly kind: 'graphs-empty' }
  | { readonly kind: 'graph-name'; readonly name: string }
  | { readonly kind: 'graph-not-spec'; readonly name: string }
  | { readonly kind: 'auth-not-object' }
  | { readonly kind: 'auth-path-not-string' }
  | { readonly kind: 'env-invalid' }
  /** A key of the `http` block (or `auth.disable_studio_auth`) that is not what it must be. */
  | { readonly kind: 'http-invalid'; readonly key: string }
  /** A key of `ui` or `ui_config` (langgraph-ui-config.ts). */
  | UiProblem;

/** The `http` block, as written (only the keys the servers use are checked). */
export interface HttpConfig {
  readonly app: string | null;
  readonly configurableHeaders: { readonly include?: readonly string[]; readonly exclude?: readonly string[] } | null;
  /** `http.cors`, as written (null: the default, any origin). */
  readonly cors: CorsConfig | null;
  /** The API route groups turned off (`disable_<group>: true`). */
  readonly disabled: ReadonlySet<'assistants' | 'threads' | 'runs' | 'store' | 'meta'>;
}

export interface CorsConfig {
  readonly allow_origins?: readonly string[];
  readonly allow_origin_regex?: string;
  readonly allow_methods?: readonly string[];
  readonly allow_headers?: readonly string[];
  readonly allow_credentials?: boolean;
  readonly expose_headers?: readonly string[];
  readonly max_age?: number;
}

const DISABLE_KEYS = ['assistants', 'threads', 'runs', 'store', 'meta'] as const;

export interface ConfigVisitor<G, A> {
  /** The caller's error for a problem of the document; it is thrown. */
  problem(problem: ConfigProblem): Error;
  /** One graph whose name is valid, with its spec as written; called in document order. */
  graph(name: string, spec: string): Promise<G>;
  /** `auth.path` as written, when present. */
  auth(path: string): Promise<A>;
}

export const GRAPH_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
export const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The config's text → its graphs (in document order) and auth, each as the visitor made it. */
export async function parseLanggraphConfig<G, A>(
  text: string,
  visit: ConfigVisitor<G, A>,
): Promise<{
  graphs: [name: string, graph: G][];
  auth: A | null;
  /** A map of variable to value, a path of a `.env` file (relative to the config file), or null. */
  env: Readonly<Record<string, string>> | string | null;
  http: HttpConfig;
  /** Each graph's `description`, when given. */
  descriptions: ReadonlyMap<string, string>;
  /** `auth.disable_studio_auth`: the design studio's requests go through the auth handler like any other. */
  disableStudioAuth: boolean;
  /** `ui` and `ui_config.shared` (generative UI). */
  ui: UiConfig;
}> {
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    // Never the parser's message: it quotes the file, which may be any file of the repository (secrets.env, say).
    throw visit.problem({ kind: 'not-json', detail: jsonErrorPosition(text) });
  }
  if (!isObject(config)) throw visit.problem({ kind: 'not-object' });
  const graphsIn = config.graphs;
  if (graphsIn === undefined) throw visit.problem({ kind: 'graphs-missing' });
  if (!isObject(graphsIn)) throw visit.problem({ kind: 'graphs-not-object' });
  if (Object.keys(graphsIn).length === 0) throw visit.problem({ kind: 'graphs-empty' });

  const graphs: [string, G][] = [];
  const descriptions = new Map<string, string>();
  for (const [name, value] of Object.entries(graphsIn)) {
    if (!GRAPH_NAME.test(name)) throw visit.problem({ kind: 'graph-name', name });
    const spec =
      typeof value === 'string' ? value : isObject(value) && typeof value.path === 'string' ? value.path : null;
    if (spec === null) throw visit.problem({ kind: 'graph-not-spec', name });
    if (isObject(value) && typeof value.description === 'string') descriptions.set(name, value.description);
    graphs.push([name, await visit.graph(name, spec)]);
  }

  let auth: A | null = null;
  let disableStudioAuth = false;
  if (config.auth !== undefined && config.auth !== null) {
    if (!isObject(config.auth)) throw visit.problem({ kind: 'auth-not-object' });
    const studio = config.auth.disable_studio_auth;
    if (studio !== undefined && studio !== null && typeof studio !== 'boolean')
      throw visit.problem({ kind: 'http-invalid', key: 'auth.disable_studio_auth' });
    disableStudioAuth = studio === true;
    if (config.auth.path !== undefined) {
      if (typeof config.auth.path !== 'string') throw visit.problem({ kind: 'auth-path-not-string' });
      auth = await visit.auth(config.auth.path);
    }
  }
  return {
    graphs,
    auth,
    env: envOf(config.env, visit),
    http: httpOf(config.http, visit),
    descriptions,
    disableStudioAuth,
    ui: uiOf(config.ui, config.ui_config, (p) => visit.problem(p)),
  };
}

function envOf(env: unknown, visit: ConfigVisitor<unknown, unknown>): Readonly<Record<string, string>> | string | null {
  if (env === undefined || env === null) return null;
  if (typeof env === 'string' && env.trim() !== '') return env;
  if (!isObject(env)) throw visit.problem({ kind: 'env-invalid' });
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw visit.problem({ kind: 'env-invalid' });
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else throw visit.problem({ kind: 'env-invalid' });
  }
  return out;
}

function httpOf(http: unknown, visit: ConfigVisitor<unknown, unknown>): HttpConfig {
  if (http === undefined || http === null)
    return { app: null, configurableHeaders: null, cors: null, disabled: new Set() };
  if (!isObject(http)) throw visit.problem({ kind: 'http-invalid', key: 'http' });
  if (http.app !== undefined && http.app !== null && (typeof http.app !== 'string' || http.app.trim() === ''))
    throw visit.problem({ kind: 'http-invalid', key: 'http.app' });
  let configurableHeaders: HttpConfig['configurableHeaders'] = null;
  const headers = http.configurable_headers;
  if (headers !== undefined && headers !== null) {
    if (!isObject(headers)) throw visit.problem({ kind: 'http-invalid', key: 'http.configurable_headers' });
    const list = (key: 'include' | 'exclude'): string[] | undefined => {
      const v = headers[key];
      if (v === undefined || v === null) return undefined;
      if (!Array.isArray(v) || !v.every((p) => typeof p === 'string'))
        throw visit.problem({ kind: 'http-invalid', key: `http.configurable_headers.${key}` });
      return v.map((p) => p.toLowerCase());
    };
    const include = list('include');
    const exclude = list('exclude');
    configurableHeaders = { ...(include ? { include } : {}), ...(exclude ? { exclude } : {}) };
  }
  const disabled = new Set<(typeof DISABLE_KEYS)[number]>();
  for (const group of DISABLE_KEYS) {
    const v = http[`disable_${group}`];
    if (v === undefined || v === null || v === false) continue;
    if (v !== true) throw visit.problem({ kind: 'http-invalid', key: `http.disable_${group}` });
    disabled.add(group);
  }
  return {
    app: typeof http.app === 'string' ? http.app : null,
    configurableHeaders,
    cors: corsOf(http.cors, visit),
    disabled,
  };
}

function corsOf(cors: unknown, visit: ConfigVisitor<unknown, unknown>): CorsConfig | null {
  if (cors === undefined || cors === null) return null;
  const bad = (key: string) => visit.problem({ kind: 'http-invalid', key: `http.cors${key ? `.${key}` : ''}` });
  if (!isObject(cors)) throw bad('');
  const strings = (key: string) => {
    const v = cors[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad(key);
    return v;
  };
  const out: Record<string, unknown> = {
    allow_origins: strings('allow_origins'),
    allow_methods: strings('allow_methods'),
    allow_headers: strings('allow_headers'),
    expose_headers: strings('expose_headers'),
  };
  if (cors.allow_origin_regex !== undefined && cors.allow_origin_regex !== null) {
    if (typeof cors.allow_origin_regex !== 'string') throw bad('allow_origin_regex');
    try {
      new RegExp(cors.allow_origin_regex);
    } catch {
      throw bad('allow_origin_regex');
    }
    out.allow_origin_regex = cors.allow_origin_regex;
  }
  if (cors.allow_credentials !== undefined && cors.allow_credentials !== null) {
    if (typeof cors.allow_credentials !== 'boolean') throw bad('allow_credentials');
    out.allow_credentials = cors.allow_credentials;
  }
  if (cors.max_age !== undefined && cors.max_age !== null) {
    if (typeof cors.max_age !== 'number' || !Number.isInteger(cors.max_age) || cors.max_age < 0) throw bad('max_age');
    out.max_age = cors.max_age;
  }
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

/**
 * `<file>:<export>` or `<file>` → its parts; the last ":" separates the export. With `driveLetters`, a ":" right after
 * a leading Windows drive letter (`C:\` or `C:/`) belongs to the path, and so does a leading ":".
 */
export function splitModuleSpec(
  spec: string,
  { driveLetters }: { driveLetters: boolean },
): { file: string; exportName: string; hasExport: boolean } {
  const colon = spec.lastIndexOf(':');
  const hasExport = driveLetters ? colon > 1 || (colon === 1 && !/^[A-Za-z]:[\\/]/.test(spec)) : colon !== -1;
  return {
    file: hasExport ? spec.slice(0, colon) : spec,
    exportName: hasExport ? spec.slice(colon + 1) : 'default',
    hasExport,
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What a ConfigProblem means for the user, naming the file (the same words from a build and from the Agent Server). */
export function describeConfigProblem(configFile: string, p: ConfigProblem): string {
  switch (p.kind) {
    case 'not-json':
      return `${configFile}: not valid JSON (${p.detail})`;
    case 'not-object':
      return `${configFile}: must be a JSON object with "graphs"`;
    case 'graphs-missing':
      return `${configFile}: "graphs" is required: a map of graph name to "<file>:<export>"`;
    case 'graphs-not-object':
      return `${configFile}: "graphs" must be an object mapping graph names to "<file>:<export>"`;
    case 'graphs-empty':
      return `${configFile}: "graphs" is empty: declare at least one graph`;
    case 'graph-name':
      return `${configFile}: graphs.${p.name}: graph names are 1-128 letters, digits, "_", "." or "-"`;
    case 'graph-not-spec':
      return `${configFile}: graphs.${p.name}: must be "<file>:<export>", e.g. "./src/agent.ts:graph"`;
    case 'auth-not-object':
    case 'auth-path-not-string':
      return `${configFile}: auth.path: must be "<file>:<export>" or "<file>", e.g. "./src/auth.ts:auth"`;
    case 'env-invalid':
      return `${configFile}: env: must be a map of variable names to string values, or the path of a .env file`;
    case 'http-invalid':
      return `${configFile}: ${p.key}: ${httpRule(p.key)}`;
    case 'ui-invalid':
      return `${configFile}: ${p.key}: ${p.rule}`;
  }
}

/** What a key of the `http` block must be. */
function httpRule(key: string): string {
  if (key === 'http') return 'must be an object';
  if (key === 'http.app') return 'must be "<file>:<export>" of a Hono app, e.g. "./src/app.ts:app"';
  if (key.startsWith('http.disable_') || key === 'http.cors.allow_credentials' || key === 'auth.disable_studio_auth')
    return 'must be true or false';
  if (key === 'http.cors')
    return 'must be an object (allow_origins, allow_origin_regex, allow_methods, allow_headers, allow_credentials, expose_headers, max_age)';
  if (key === 'http.cors.allow_origin_regex') return 'must be a valid regular expression';
  if (key === 'http.cors.max_age') return 'must be a whole number of seconds';
  if (key.startsWith('http.cors.')) return 'must be a list of strings';
  return 'must be a list of header names (a "*" matches any characters)';
}

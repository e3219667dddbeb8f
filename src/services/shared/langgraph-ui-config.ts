/**
 * `ui` and `ui_config` of an app config (generative UI): `ui` maps a name (the graph's, as the client asks for it) to
 * the file of its React components, relative to the config file; `ui_config.shared` names modules the bundle leaves
 * to the page (as `react` is). Only the format is checked here; whether a file is inside the app is each caller's.
 */
export interface UiConfig {
  /** Name → file as written, in document order. */
  readonly components: ReadonlyMap<string, string>;
  readonly shared: readonly string[];
}

/** A key of `ui` / `ui_config` that is not what it must be, and the rule it breaks. */
export interface UiProblem {
  readonly kind: 'ui-invalid';
  readonly key: string;
  readonly rule: string;
}

/** The same rule as a graph's name (the client asks for a graph's components by its name). */
const UI_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export const NO_UI: UiConfig = { components: new Map(), shared: [] };

/** A module name for `ui_config.shared`: a package name with an optional subpath, nothing else. */
const MODULE_NAME = /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w.-]+)*$/i;

export function uiOf(ui: unknown, uiConfig: unknown, problem: (p: UiProblem) => Error): UiConfig {
  const bad = (key: string, rule: string) => problem({ kind: 'ui-invalid', key, rule });
  if ((ui === undefined || ui === null) && (uiConfig === undefined || uiConfig === null)) return NO_UI;
  const components = new Map<string, string>();
  if (ui !== undefined && ui !== null) {
    if (!isObject(ui))
      throw bad('ui', 'must be a map of graph names to component files, e.g. {"agent": "./src/ui.tsx"}');
    for (const [name, file] of Object.entries(ui)) {
      if (!UI_NAME.test(name))
        throw bad(`ui.${name.slice(0, 128)}`, 'names are 1-128 letters, digits, "_", "." or "-"');
      if (typeof file !== 'string' || file.trim() === '')
        throw bad(`ui.${name}`, 'must be the path of a file of React components, e.g. "./src/ui.tsx"');
      components.set(name, file);
    }
  }
  let shared: string[] = [];
  if (uiConfig !== undefined && uiConfig !== null) {
    if (!isObject(uiConfig)) throw bad('ui_config', 'must be an object, e.g. {"shared": ["my-design-system"]}');
    const list = uiConfig.shared;
    if (list !== undefined && list !== null) {
      if (!Array.isArray(list) || !list.every((m): m is string => typeof m === 'string' && MODULE_NAME.test(m)))
        throw bad('ui_config.shared', 'must be a list of package names, e.g. ["my-design-system"]');
      shared = list;
    }
  }
  return { components, shared };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseEnv } from 'node:util';
import {
  describeConfigProblem,
  EXPORT_NAME,
  parseLanggraphConfig,
  splitModuleSpec,
  type HttpConfig,
} from '../shared/langgraph-config.ts';
import { isUnlocatedSyntaxError, locateSyntaxErrors } from './syntax-error-location.ts';
import { uiComponentFiles, UiFileError } from './ui/ui-files.ts';

/**
 * The app an Agent Server serves, from its app config (`langgraph.json`,
 * parsed by ../shared/langgraph-config.ts): `auth.path` names the custom auth
 * handler, `http.app` a Hono app of custom routes, `env` the variables the app
 * needs (a map, or a `.env` file), `ui` the generative UI components. Files are TypeScript or JavaScript, relative
 * to the config file (or absolute), and loaded with a dynamic import (tsx or
 * vitest compile TypeScript on the fly). Every problem is an AppConfigError
 * naming the file and the key to fix; a graph whose module fails to load is a
 * GraphLoadError, whose message is one line naming the graph and the error.
 */
export interface ModuleRef {
  /** Absolute path of the file. */
  readonly file: string;
  /** Export name; `default` when the spec names none. */
  readonly exportName: string;
  /** As written in the config, for messages. */
  readonly spec: string;
}

export interface AppConfig {
  readonly configFile: string;
  readonly graphs: ReadonlyMap<string, ModuleRef>;
  readonly auth: ModuleRef | null;
  /** `http.app`: a Hono app mounted before the API routes. */
  readonly httpApp: ModuleRef | null;
  /** `http.configurable_headers`: which request headers reach `config.configurable` (default: `x-*`, `user-agent`). */
  readonly configurableHeaders: HttpConfig['configurableHeaders'];
  /** `http.cors` (null: any origin). */
  readonly cors: HttpConfig['cors'];
  /** `http.disable_<group>`: API route groups not served. */
  readonly disabled: HttpConfig['disabled'];
  /** The `env` block (read from its file when it names one); applied by applyAppEnv. */
  readonly env: Readonly<Record<string, string>>;
  /** `auth.disable_studio_auth`: the design studio's requests are authenticated by the app's handler too. */
  readonly disableStudioAuth: boolean;
  /** `graphs.<name>.description`: the description of the graph's default assistant. */
  readonly descriptions: ReadonlyMap<string, string>;
  /** `ui`: graph name → absolute path of its components' file, inside the app's folder (ui/ui-files.ts). */
  readonly ui: ReadonlyMap<string, string>;
  /** `ui_config.shared`: modules the UI bundles leave to the page. */
  readonly uiShared: readonly string[];
}

export class AppConfigError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'AppConfigError';
  }
}

/**
 * A graph (or the auth handler, or the HTTP app) whose module failed to load, or that exports no graph. `line` is one
 * line, `graphs.<name>: <the import error's first line>` (e.g. `graphs.echo: Cannot find package '@langchain/core'
 * imported from /app/src/echo.ts`): what a deployment's load check shows, and what the server alone prints before it
 * exits (main.ts, exit code 3). The import error is kept as `cause` (with its stack, for a debug log).
 */
export class GraphLoadError extends AppConfigError {
  readonly line: string;
  constructor(
    /** `graphs.<name>`, `auth.path` or `http.app`. */
    readonly key: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    const line = `${key}: ${firstLine(reason)}`;
    super(line);
    this.line = line;
    this.name = 'GraphLoadError';
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** The first non-empty line of a message, at most 500 characters (an import error may quote a require stack). */
function firstLine(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== '') ?? 'failed to load';
  return line.length > 500 ? `${line.slice(0, 500)}…` : line.trim();
}

/**
 * `envGiven`: the process's environment already holds the app's env, as its build read it (a deployment's process:
 * the control plane gives it): the config's `env` is not read again, so a `.env` the running app rewrote is never
 * applied at its next start.
 */
export async function readAppConfig(configPath: string, { envGiven = false } = {}): Promise<AppConfig> {
  const configFile = resolve(configPath);
  let text: string;
  try {
    text = await readFile(configFile, 'utf8');
  } catch (err) {
    throw new AppConfigError(
      `${configFile}: cannot read the app config (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const base = dirname(configFile);
  const config = await parseLanggraphConfig(text, {
    problem: (p) => new AppConfigError(describeConfigProblem(configFile, p)),
    graph: (name, spec) => moduleRef(base, spec, `${configFile}: graphs.${name}`),
    auth: (path) => moduleRef(base, path, `${configFile}: auth.path`),
  });
  const httpApp = config.http.app === null ? null : await moduleRef(base, config.http.app, `${configFile}: http.app`);
  const ui = await uiComponentFiles(base, config.ui).catch((err: unknown) => {
    throw err instanceof UiFileError ? new AppConfigError(`${configFile}: ${err.message}`) : err;
  });
  return {
    configFile,
    graphs: new Map(config.graphs),
    auth: config.auth,
    httpApp,
    configurableHeaders: config.http.configurableHeaders,
    cors: config.http.cors,
    disabled: config.http.disabled,
    env: envGiven
      ? {}
      : typeof config.env === 'string'
        ? await readEnvFile(base, config.env, configFile)
        : (config.env ?? {}),
    descriptions: config.descriptions,
    disableStudioAuth: config.disableStudioAuth,
    ui,
    uiShared: config.ui.shared,
  };
}

/** `env: "./.env"`: the file's variables (KEY=value lines, as Node's parseEnv reads them). */
async function readEnvFile(base: string, path: string, configFile: string): Promise<Record<string, string>> {
  const file = isAbsolute(path) ? path : resolve(base, path);
  try {
    return parseEnv(await readFile(file, 'utf8')) as Record<string, string>;
  } catch (err) {
    throw new AppConfigError(
      `${configFile}: env: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'not a .env file'})`,
    );
  }
}

/**
 * Sets the variables of the app's `env` block that the process does not set already (the environment of the server
 * wins, as a deployment's own variables do), before any module of the app loads. One server process serves one app,
 * so this is the app's environment. Answers the names it set.
 */
export function applyAppEnv(config: AppConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  const set: string[] = [];
  for (const [k, v] of Object.entries(config.env)) {
    if (env[k] !== undefined) continue;
    env[k] = v;
    set.push(k);
  }
  return set;
}

/** The named export of a module of the app; an AppConfigError when the file fails to load or lacks it. */
export async function importExport(ref: ModuleRef, where: string): Promise<unknown> {
  let mod: Record<string, unknown>;
  const key = where.slice(where.lastIndexOf(': ') + 2);
  try {
    mod = (await import(pathToFileURL(ref.file).href)) as Record<string, unknown>;
  } catch (err) {
    // Plain JavaScript's syntax errors say where as TypeScript's do (syntax-error-location.ts).
    const located = isUnlocatedSyntaxError(err) ? await locateSyntaxErrors(ref.file) : null;
    const cause = located ?? err;
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new GraphLoadError(key, message, { cause });
  }
  if (!(ref.exportName in mod) || mod[ref.exportName] === undefined) {
    const exported = Object.keys(mod).filter((k) => k !== '__esModule');
    throw new GraphLoadError(
      key,
      `${ref.file} has no export "${ref.exportName}" (it exports: ${exported.join(', ') || 'nothing'})`,
    );
  }
  return mod[ref.exportName];
}

async function moduleRef(base: string, spec: string, where: string): Promise<ModuleRef> {
  const { file: path, exportName } = splitModuleSpec(spec, { driveLetters: true });
  if (path.trim() === '') throw new AppConfigError(`${where}: "${spec}" names no file`);
  if (!EXPORT_NAME.test(exportName)) throw new AppConfigError(`${where}: "${exportName}" is not a valid export name`);
  const file = isAbsolute(path) ? path : resolve(base, path);
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new AppConfigError(`${where}: file ${file} not found`);
  return { file, exportName, spec };
}

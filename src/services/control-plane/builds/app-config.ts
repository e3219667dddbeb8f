import { realpath, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { isInside } from '../../shared/inside-folder.ts';
import { APP_CONFIG_MAX_BYTES, APP_ENV_MAX_BYTES, envMap, kib, parseDotenv, readBounded, TOO_BIG } from './app-env.ts';
import {
  describeConfigProblem,
  EXPORT_NAME,
  parseLanggraphConfig,
  splitModuleSpec,
} from '../../shared/langgraph-config.ts';

/**
 * The app config of a checkout (`langgraph.json`, parsed by
 * ../shared/langgraph-config.ts). Here a graph must name its export, and
 * files are relative to the config file and must exist in the checkout,
 * inside the repository. Every problem is a BuildFailure whose message tells
 * the user what to fix.
 *
 * Every file the config names (graphs, `auth.path`, `http.app`, `ui` entries, an `env` file) resolves, symlinks
 * included, to a regular file inside the checkout, or the build fails naming the key: a `.env -> /proc/self/environ`
 * would otherwise hand the reader's environment (the gateway's, with its secrets) to the app. Nothing is read to decide
 * (lstat and realpath only), so no byte of a file outside can reach a status message.
 *
 * The config and its `env` file are read here once, each with a size bound (app-env.ts), and the app's environment is
 * the build's result: a start or restart of the revision takes it from the revision's record, never from the folder.
 */
export interface AppConfig {
  readonly graphs: Readonly<Record<string, string>>;
  readonly authPath: string | null;
  /** `install_scripts: true`: npm runs the dependencies' install scripts (install.ts). */
  readonly installScripts: boolean;
  /** The app's environment: the config's `env` map, or its `.env` file parsed. */
  readonly env: Readonly<Record<string, string>>;
}

export class BuildFailure extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'BuildFailure';
  }
}

export async function readAppConfig(root: string, configPath: string, ref: string): Promise<AppConfig> {
  const at = `at ref ${ref}`;
  const configFile = posix.normalize(configPath.replace(/^\.\//, ''));
  if (outside(configFile) || posix.isAbsolute(configFile)) {
    throw new BuildFailure(`langgraph_config_path: ${configPath} must be a path inside the repository`);
  }
  const rootReal = await realpath(root);
  const text = await readBounded(rootReal, configFile, APP_CONFIG_MAX_BYTES);
  if (text === null) throw new BuildFailure(`langgraph_config_path: file ${configFile} not found ${at}`);
  if (text === TOO_BIG)
    throw new BuildFailure(
      `langgraph_config_path: file ${configFile} is over its limit of ${kib(APP_CONFIG_MAX_BYTES)}`,
    );

  const base = posix.dirname(configFile);
  const config = await parseLanggraphConfig(text, {
    problem: (p) => new BuildFailure(describeConfigProblem(configFile, p)),
    graph: async (name, spec) => {
      const where = `graphs.${name}`;
      const { file, exportName } = splitSpec(where, spec, true);
      await requireFile(rootReal, base, file, where, at);
      return `${file}:${exportName}`;
    },
    auth: async (path) => {
      const { file, exportName } = splitSpec('auth.path', path, false);
      await requireFile(rootReal, base, file, 'auth.path', at);
      return `${file}:${exportName}`;
    },
  });
  if (config.http.app !== null) {
    const { file } = splitSpec('http.app', config.http.app, true);
    await requireFile(rootReal, base, file, 'http.app', at);
  }
  let env: Record<string, string> = {};
  if (typeof config.env === 'string') {
    await requireFile(rootReal, base, config.env, 'env', at);
    const file = posix.normalize(posix.join(base, config.env.replace(/\\/g, '/')));
    const dotenv = await readBounded(rootReal, file, APP_ENV_MAX_BYTES);
    if (dotenv === TOO_BIG) throw new BuildFailure(`env: file ${file} is over its limit of ${kib(APP_ENV_MAX_BYTES)}`);
    env = parseDotenv(dotenv ?? '');
  } else if (config.env !== null) env = envMap(config.env);
  const installScripts = installScriptsOf(text);
  for (const [name, file] of config.ui.components) {
    await requireFile(rootReal, base, file, `ui.${name}`, at);
    // The bundler (@langchain/langgraph-ui) takes only files below the config's folder: say so now, not at the start.
    if (outside(posix.normalize(file)))
      throw new BuildFailure(`ui.${name}: file ${file} is outside the app's folder (where ${configFile} is)`);
  }
  const graphs: Record<string, string> = {};
  for (const [name, graph] of config.graphs) graphs[name] = graph;
  return { graphs, authPath: config.auth, installScripts, env };
}

/** `install_scripts` (true or false), the key only a build reads. */
function installScriptsOf(text: string): boolean {
  const scripts = (JSON.parse(text) as Record<string, unknown>).install_scripts; // parsed once already: valid JSON
  if (scripts !== undefined && scripts !== null && typeof scripts !== 'boolean')
    throw new BuildFailure('install_scripts: must be true or false');
  return scripts === true;
}

function splitSpec(where: string, spec: string, exportRequired: boolean): { file: string; exportName: string } {
  const { file, exportName, hasExport } = splitModuleSpec(spec, { driveLetters: false });
  if (file.trim() === '' || (exportRequired && !hasExport) || !EXPORT_NAME.test(exportName)) {
    throw new BuildFailure(`${where}: "${spec}" must be "<file>:<export>", e.g. "./src/agent.ts:graph"`);
  }
  return { file, exportName };
}

/**
 * The file as the user wrote it, relative to the config's folder; fails unless it is a regular file inside the
 * checkout.
 */
async function requireFile(rootReal: string, base: string, file: string, where: string, at: string): Promise<void> {
  const inRepo = posix.normalize(posix.join(base, file));
  const shown = inRepo;
  if (outside(inRepo) || posix.isAbsolute(file))
    throw new BuildFailure(`${where}: file ${file} is outside the repository`);
  const full = join(rootReal, ...inRepo.split('/'));
  let real: string;
  try {
    real = await realpath(full);
  } catch {
    throw new BuildFailure(`${where}: file ${shown} not found ${at}`);
  }
  // Inside first: whether a file outside exists, or what it is, is none of the build's business.
  if (!isInside(rootReal, real)) throw new BuildFailure(`${where}: file ${shown} points outside the repository`);
  if (!(await stat(real)).isFile()) throw new BuildFailure(`${where}: ${shown} is not a file ${at}`);
}

/** A normalised relative path that climbs out of where it starts. */
function outside(path: string): boolean {
  return path === '..' || path.startsWith('../');
}

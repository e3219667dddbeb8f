import { readFile, realpath, stat } from 'node:fs/promises';
import { dirname, join, posix, relative, sep } from 'node:path';

/**
 * The app config of a checkout (`langgraph.json` in the public platform):
 * JSON, `graphs` mapping each graph name to `<file>:<export>` (or to
 * `{"path": "<file>:<export>"}`), optional `auth.path` as `<file>:<export>`
 * or `<file>` (default export). Files are relative to the config file and
 * must exist in the checkout, inside the repository. Every problem is a
 * BuildFailure whose message tells the user what to fix.
 */
export interface AppConfig {
  readonly graphs: Readonly<Record<string, string>>;
  readonly authPath: string | null;
}

export class BuildFailure extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'BuildFailure';
  }
}

const EXPORT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const GRAPH_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

export async function readAppConfig(root: string, configPath: string, ref: string): Promise<AppConfig> {
  const at = `at ref ${ref}`;
  const configFile = posix.normalize(configPath.replace(/^\.\//, ''));
  if (configFile.startsWith('..') || posix.isAbsolute(configFile)) {
    throw new BuildFailure(`langgraph_config_path: ${configPath} must be a path inside the repository`);
  }
  const rootReal = await realpath(root);
  const text = await readInside(rootReal, configFile);
  if (text === null) throw new BuildFailure(`langgraph_config_path: file ${configFile} not found ${at}`);

  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (err) {
    throw new BuildFailure(`${configFile}: not valid JSON (${(err as Error).message.slice(0, 160)})`);
  }
  if (!isObject(config)) throw new BuildFailure(`${configFile}: must be a JSON object with "graphs"`);
  const graphsIn = config.graphs;
  if (graphsIn === undefined)
    throw new BuildFailure(`${configFile}: "graphs" is required: a map of graph name to "<file>:<export>"`);
  if (!isObject(graphsIn))
    throw new BuildFailure(`${configFile}: "graphs" must be an object mapping graph names to "<file>:<export>"`);
  if (Object.keys(graphsIn).length === 0)
    throw new BuildFailure(`${configFile}: "graphs" is empty: declare at least one graph`);

  const base = posix.dirname(configFile);
  const graphs: Record<string, string> = {};
  for (const [name, value] of Object.entries(graphsIn)) {
    const where = `graphs.${name}`;
    if (!GRAPH_NAME.test(name))
      throw new BuildFailure(`${where}: graph names are 1-128 letters, digits, "_", "." or "-"`);
    const spec =
      typeof value === 'string' ? value : isObject(value) && typeof value.path === 'string' ? value.path : null;
    if (spec === null) throw new BuildFailure(`${where}: must be "<file>:<export>", e.g. "./src/agent.ts:graph"`);
    const { file, exportName } = splitSpec(where, spec, true);
    await requireFile(rootReal, base, file, where, at);
    graphs[name] = `${file}:${exportName}`;
  }

  let authPath: string | null = null;
  if (config.auth !== undefined && config.auth !== null) {
    if (!isObject(config.auth) || (config.auth.path !== undefined && typeof config.auth.path !== 'string')) {
      throw new BuildFailure(`auth.path: must be "<file>:<export>", e.g. "./src/auth.ts:auth"`);
    }
    if (typeof config.auth.path === 'string') {
      const { file, exportName } = splitSpec('auth.path', config.auth.path, false);
      await requireFile(rootReal, base, file, 'auth.path', at);
      authPath = `${file}:${exportName}`;
    }
  }
  return { graphs, authPath };
}

function splitSpec(where: string, spec: string, exportRequired: boolean): { file: string; exportName: string } {
  const colon = spec.lastIndexOf(':');
  const file = colon === -1 ? spec : spec.slice(0, colon);
  const exportName = colon === -1 ? 'default' : spec.slice(colon + 1);
  if (file.trim() === '' || (exportRequired && colon === -1) || !EXPORT.test(exportName)) {
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
  if (inRepo.startsWith('..') || posix.isAbsolute(file))
    throw new BuildFailure(`${where}: file ${file} is outside the repository`);
  const full = join(rootReal, ...inRepo.split('/'));
  let real: string;
  try {
    real = await realpath(full);
    if (!(await stat(real)).isFile()) throw new BuildFailure(`${where}: ${shown} is not a file ${at}`);
  } catch (err) {
    if (err instanceof BuildFailure) throw err;
    throw new BuildFailure(`${where}: file ${shown} not found ${at}`);
  }
  if (!isInside(rootReal, real)) throw new BuildFailure(`${where}: file ${shown} points outside the repository`);
}

async function readInside(rootReal: string, file: string): Promise<string | null> {
  try {
    const real = await realpath(join(rootReal, ...file.split('/')));
    if (!isInside(rootReal, real) || !(await stat(real)).isFile()) return null;
    return await readFile(real, 'utf8');
  } catch {
    return null;
  }
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..' + sep) && rel !== '..' && !dirname(rel).startsWith('..');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

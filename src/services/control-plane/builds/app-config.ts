import { readFile, realpath, stat } from 'node:fs/promises';
import { dirname, join, posix, relative, sep } from 'node:path';
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

export async function readAppConfig(root: string, configPath: string, ref: string): Promise<AppConfig> {
  const at = `at ref ${ref}`;
  const configFile = posix.normalize(configPath.replace(/^\.\//, ''));
  if (configFile.startsWith('..') || posix.isAbsolute(configFile)) {
    throw new BuildFailure(`langgraph_config_path: ${configPath} must be a path inside the repository`);
  }
  const rootReal = await realpath(root);
  const text = await readInside(rootReal, configFile);
  if (text === null) throw new BuildFailure(`langgraph_config_path: file ${configFile} not found ${at}`);

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
  const graphs: Record<string, string> = {};
  for (const [name, graph] of config.graphs) graphs[name] = graph;
  return { graphs, authPath: config.auth };
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

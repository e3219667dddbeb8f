import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The app an Agent Server serves, from its app config (`langgraph.json` in
 * the public platform): `graphs` maps a graph name to `<file>:<export>` (or
 * `{"path": "<file>:<export>"}`), `auth.path` names the custom auth handler
 * as `<file>:<export>` or `<file>` (its default export). Files are
 * TypeScript or JavaScript, relative to the config file, and loaded with a
 * dynamic import (tsx or vitest compile TypeScript on the fly). Every
 * problem is an AppConfigError naming the file and the key to fix.
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
}

export class AppConfigError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'AppConfigError';
  }
}

const GRAPH_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const EXPORT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export async function readAppConfig(configPath: string): Promise<AppConfig> {
  const configFile = resolve(configPath);
  let text: string;
  try {
    text = await readFile(configFile, 'utf8');
  } catch (err) {
    throw new AppConfigError(
      `${configFile}: cannot read the app config (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (err) {
    throw new AppConfigError(`${configFile}: not valid JSON (${(err as Error).message.slice(0, 160)})`);
  }
  if (!isObject(config)) throw new AppConfigError(`${configFile}: must be a JSON object with "graphs"`);
  if (!isObject(config.graphs) || Object.keys(config.graphs).length === 0) {
    throw new AppConfigError(`${configFile}: "graphs" must map at least one graph name to "<file>:<export>"`);
  }
  const base = dirname(configFile);
  const graphs = new Map<string, ModuleRef>();
  for (const [name, value] of Object.entries(config.graphs)) {
    const where = `${configFile}: graphs.${name}`;
    if (!GRAPH_NAME.test(name))
      throw new AppConfigError(`${where}: graph names are 1-128 letters, digits, "_", "." or "-"`);
    const spec =
      typeof value === 'string' ? value : isObject(value) && typeof value.path === 'string' ? value.path : null;
    if (spec === null) throw new AppConfigError(`${where}: must be "<file>:<export>", e.g. "./src/agent.ts:graph"`);
    graphs.set(name, await moduleRef(base, spec, where));
  }
  let auth: ModuleRef | null = null;
  if (config.auth !== undefined && config.auth !== null) {
    const where = `${configFile}: auth.path`;
    if (!isObject(config.auth)) throw new AppConfigError(`${configFile}: "auth" must be an object with "path"`);
    if (config.auth.path !== undefined) {
      if (typeof config.auth.path !== 'string')
        throw new AppConfigError(`${where}: must be "<file>:<export>" or "<file>"`);
      auth = await moduleRef(base, config.auth.path, where);
    }
  }
  return { configFile, graphs, auth };
}

/** The named export of a module of the app; an AppConfigError when the file fails to load or lacks it. */
export async function importExport(ref: ModuleRef, where: string): Promise<unknown> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(ref.file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new AppConfigError(`${where}: ${ref.spec} failed to load: ${(err as Error).message}`);
  }
  if (!(ref.exportName in mod) || mod[ref.exportName] === undefined) {
    const exported = Object.keys(mod).filter((k) => k !== '__esModule');
    throw new AppConfigError(
      `${where}: ${ref.file} has no export "${ref.exportName}" (it exports: ${exported.join(', ') || 'nothing'})`,
    );
  }
  return mod[ref.exportName];
}

async function moduleRef(base: string, spec: string, where: string): Promise<ModuleRef> {
  // The last ":" separates the export, unless it belongs to a Windows drive letter.
  const colon = spec.lastIndexOf(':');
  const hasExport = colon > 1 || (colon === 1 && !/^[A-Za-z]:[\\/]/.test(spec));
  const path = hasExport ? spec.slice(0, colon) : spec;
  const exportName = hasExport ? spec.slice(colon + 1) : 'default';
  if (path.trim() === '') throw new AppConfigError(`${where}: "${spec}" names no file`);
  if (!EXPORT.test(exportName)) throw new AppConfigError(`${where}: "${exportName}" is not a valid export name`);
  const file = isAbsolute(path) ? path : resolve(base, path);
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new AppConfigError(`${where}: file ${file} not found`);
  return { file, exportName, spec };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  describeConfigProblem,
  EXPORT_NAME,
  parseLanggraphConfig,
  splitModuleSpec,
} from '../shared/langgraph-config.ts';

/**
 * The app an Agent Server serves, from its app config (`langgraph.json`,
 * parsed by ../shared/langgraph-config.ts): `auth.path` names the custom auth
 * handler. Files are TypeScript or JavaScript, relative to the config file
 * (or absolute), and loaded with a dynamic import (tsx or vitest compile
 * TypeScript on the fly). Every problem is an AppConfigError naming the file
 * and the key to fix.
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
  const base = dirname(configFile);
  const config = await parseLanggraphConfig(text, {
    problem: (p) => new AppConfigError(describeConfigProblem(configFile, p)),
    graph: (name, spec) => moduleRef(base, spec, `${configFile}: graphs.${name}`),
    auth: (path) => moduleRef(base, path, `${configFile}: auth.path`),
  });
  return { configFile, graphs: new Map(config.graphs), auth: config.auth };
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
  const { file: path, exportName } = splitModuleSpec(spec, { driveLetters: true });
  if (path.trim() === '') throw new AppConfigError(`${where}: "${spec}" names no file`);
  if (!EXPORT_NAME.test(exportName)) throw new AppConfigError(`${where}: "${exportName}" is not a valid export name`);
  const file = isAbsolute(path) ? path : resolve(base, path);
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new AppConfigError(`${where}: file ${file} not found`);
  return { file, exportName, spec };
}

/**
 * The official JS Agent Server (`@langchain/langgraph-api`), installed on first use in a folder of its own outside the
 * repository (default `${TMPDIR:-/tmp}/agent-gateway-official-server`, or BENCH_OFFICIAL_DIR), never in this project:
 * its peer `typescript@^5.5.4` conflicts with ours. The folder's package.json pins the server and the LangGraph
 * packages the graph runs on, at the versions this tree has installed (the same graph code on both sides), and
 * TypeScript 5. A folder whose package.json and installed server already match is reused as is.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const OFFICIAL_VERSION = '1.5.1';
const API = '@langchain/langgraph-api';
/** The graph's own packages: installed beside the server at the versions of this tree's node_modules. */
const GRAPH_PACKAGES = [
  '@langchain/langgraph',
  '@langchain/core',
  '@langchain/langgraph-checkpoint',
  '@langchain/langgraph-sdk',
];

const installedVersion = (nodeModules: string, name: string): string | undefined => {
  const file = join(nodeModules, name, 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : undefined;
};

function wantedManifest(root: string): string {
  const dependencies: Record<string, string> = { [API]: OFFICIAL_VERSION, typescript: '^5.5.4' };
  for (const name of GRAPH_PACKAGES) {
    const version = installedVersion(join(root, 'node_modules'), name);
    if (version === undefined) throw new Error(`${name} is not installed in ${root}/node_modules: run npm ci there`);
    dependencies[name] = version;
  }
  return `${JSON.stringify({ name: 'agent-gateway-official-server', private: true, type: 'module', dependencies }, null, 2)}\n`;
}

/** The folder holding the official server (installed now if missing or of other versions). */
export function ensureOfficialServer(root: string): string {
  const dir = process.env.BENCH_OFFICIAL_DIR ?? join(tmpdir(), 'agent-gateway-official-server');
  const manifest = wantedManifest(root);
  const manifestPath = join(dir, 'package.json');
  const current = existsSync(manifestPath) ? readFileSync(manifestPath, 'utf8') : '';
  if (current === manifest && installedVersion(join(dir, 'node_modules'), API) === OFFICIAL_VERSION) return dir;
  console.log(`installing ${API}@${OFFICIAL_VERSION} in ${dir} (once; reused by later runs)`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(manifestPath, manifest);
  execFileSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund'], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 10 * 60_000,
  });
  if (installedVersion(join(dir, 'node_modules'), API) !== OFFICIAL_VERSION)
    throw new Error(`npm install in ${dir} did not install ${API}@${OFFICIAL_VERSION}`);
  return dir;
}

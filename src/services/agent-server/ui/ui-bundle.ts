import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, relative, resolve, sep } from 'node:path';
import { getMimeType } from 'hono/utils/mime';
import { GraphLoadError } from '../app-config.ts';

/**
 * Bundles the app's generative UI components (`ui` of langgraph.json) once, as the server starts, with the official
 * bundler (@langchain/langgraph-ui: esbuild and its tailwind plugin, React and the SDK left to the page), and keeps
 * the files in memory for /ui to serve. It runs in the Agent Server's own process: at a deployment that is the
 * revision's sandboxed process (revision-host), where the app's graphs already run, so the tenant's code the bundling
 * runs (a tailwind `@plugin`, an esbuild resolution) runs there and never in the gateway or the control plane.
 *
 * A component that does not build fails the start like a graph that does not load: a GraphLoadError whose line is
 * `ui.<name>: <file>:<line>:<column>: <esbuild's message>`.
 */
export interface UiAsset {
  readonly contents: Uint8Array;
  readonly contentType: string;
}

/** Graph name → file name (`entrypoint.js`, `entrypoint.css`) → its bytes. */
export type UiBundles = ReadonlyMap<string, ReadonlyMap<string, UiAsset>>;

export async function bundleUi(
  appDir: string,
  files: ReadonlyMap<string, string>,
  shared: readonly string[],
): Promise<UiBundles> {
  const bundles = new Map<string, ReadonlyMap<string, UiAsset>>();
  if (files.size === 0) return bundles;
  // Loaded only for an app with `ui`: esbuild and tailwind cost every other server ~0.4 s and ~40 MB at start.
  const { build } = await import('@langchain/langgraph-ui');
  // One at a time: a failure names its component, and two esbuild runs would compete for the revision's one CPU.
  for (const [name, file] of files) bundles.set(name, await bundleOne(build, appDir, name, file, shared));
  return bundles;
}

type Build = (typeof import('@langchain/langgraph-ui'))['build'];

async function bundleOne(
  build: Build,
  appDir: string,
  name: string,
  file: string,
  shared: readonly string[],
): Promise<ReadonlyMap<string, UiAsset>> {
  const output = await mkdtemp(join(tmpdir(), 'agent-ui-'));
  try {
    const userPath = `./${relative(appDir, file).split(sep).join('/')}`;
    try {
      await build({ cwd: appDir, defs: { [name]: userPath }, config: { shared: [...shared] }, output });
    } catch (err) {
      throw new GraphLoadError(`ui.${name}`, buildFailure(err, appDir), { cause: err });
    }
    const folder = join(output, 'public', name);
    const assets = new Map<string, UiAsset>();
    for (const basename of (await readdir(folder)).sort()) {
      const bytes = await readFile(join(folder, basename));
      const text = ['.js', '.css'].includes(extname(basename));
      const contents = text ? withoutHostPaths(bytes, appDir) : bytes;
      assets.set(basename, { contents, contentType: contentTypeOf(basename) });
    }
    return assets;
  } finally {
    await rm(output, { recursive: true, force: true });
  }
}

/** esbuild's first error as `src/ui.tsx:3:10: <text>` (paths from the app's folder); else its message's first line. */
function buildFailure(err: unknown, appDir: string): string {
  const first = (err as { errors?: { text?: unknown; location?: Record<string, unknown> | null }[] })?.errors?.[0];
  const loc = first?.location;
  if (typeof first?.text === 'string' && loc && typeof loc.file === 'string') {
    const shown = relative(appDir, resolve(loc.file)).split(sep).join('/');
    return `${shown}:${String(loc.line)}:${String(loc.column)}: ${first.text}`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return message.replaceAll(`${appDir}${sep}`, './');
}

/**
 * esbuild marks each module with a comment naming its path (`// entrypoint-ns:/srv/builds/<id>/src/ui.tsx`): the
 * files are public, and where this host keeps the app is not the world's business.
 */
function withoutHostPaths(bytes: Uint8Array, appDir: string): Uint8Array {
  const text = Buffer.from(bytes).toString('utf8');
  return text.includes(appDir) ? Buffer.from(text.replaceAll(`${appDir}${sep}`, './').replaceAll(appDir, '.')) : bytes;
}

function contentTypeOf(basename: string): string {
  const ext = extname(basename);
  if (ext === '.js') return 'text/javascript; charset=utf-8';
  if (ext === '.css') return 'text/css; charset=utf-8';
  return getMimeType(basename) ?? 'application/octet-stream';
}

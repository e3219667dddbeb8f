/**
 * The Agent Servers bench/agent-memory.ts compares, each started in a child process of its own on a free loopback
 * port, serving the example graph (examples/app/graph.ts) from in-memory stores, under the same node flags and
 * environment (NODE_ENV=production, LOG_LEVEL=error, LangSmith tracing off):
 *
 * - ours: `main.ts` of a tree (this one, or a base revision's extracted copy) with examples/app/langgraph.api-key.json;
 * - the official JS server: its own entry point (`dist/cli/entrypoint.mjs` with its `preload.mjs`, what `langgraph-cli
 *   dev` spawns, without the watcher), in a temporary folder holding a copy of the example app's .ts files and a link
 *   to the installed server's node_modules (so the graph runs on that install's LangGraph, as the server requires), and
 *   where its `.langgraph_api` persistence files land. It has no API-key auth: the key header is ignored there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { freePort, stop } from './processes.ts';

export const API_KEY = 'bench-memory-key-0123456789';
/** The official CLI's default `--n-jobs-per-worker`: runs its queue executes at once. */
const OFFICIAL_JOBS = Number(process.env.BENCH_OFFICIAL_JOBS ?? 10);

/** Loaded into every side's process after tsx: reports its heap on SIGUSR2 (heap-probe.ts). */
const HEAP_PROBE = new URL('./heap-probe.ts', import.meta.url).href;

export interface HeapReading {
  /** V8 heap in use, MB, before and after a full GC; RSS of the process itself after it. */
  readonly heap_used_mb: number;
  readonly heap_live_mb: number;
  readonly rss_after_gc_mb: number;
  /** After the GC: the heap V8 keeps committed, and memory outside it (Buffers, ArrayBuffers, native). */
  readonly heap_total_after_gc_mb: number;
  readonly external_after_gc_mb: number;
}

export interface RunningServer {
  readonly url: string;
  readonly pid: number;
  /** The heap of the server's process, before and after a full GC (undefined when it did not answer within 5 s). */
  heap(): Promise<HeapReading | undefined>;
  stop(): Promise<void>;
}

/** A started server: its heap probe's file, read after a SIGUSR2; stopping removes the file and `cleanup` runs. */
function running(child: ChildProcess, url: string, probeFile: string, cleanup = () => {}): RunningServer {
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
  return {
    url,
    pid: child.pid!,
    async heap() {
      rmSync(probeFile, { force: true });
      child.kill('SIGUSR2');
      for (let i = 0; i < 50 && !existsSync(probeFile); i++) await sleep(100);
      await sleep(100); // written at once, but let the write finish
      if (!existsSync(probeFile)) return undefined;
      const { before, after } = JSON.parse(readFileSync(probeFile, 'utf8')) as Record<string, NodeJS.MemoryUsage>;
      return {
        heap_used_mb: mb(before!.heapUsed),
        heap_live_mb: mb(after!.heapUsed),
        rss_after_gc_mb: mb(after!.rss),
        heap_total_after_gc_mb: mb(after!.heapTotal),
        external_after_gc_mb: mb(after!.external),
      };
    },
    stop: () =>
      stop(child, 10_000).then(() => {
        rmSync(probeFile, { force: true });
        cleanup();
      }),
  };
}

const probeFile = (port: number) => join(tmpdir(), `bench-heap-probe-${process.pid}-${port}.json`);

/** The same environment for every side: no tracing, no log lines per request, no browser. */
function benchEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['LANGSMITH_API_KEY', 'LANGCHAIN_API_KEY', 'LANGSMITH_ENDPOINT', 'LANGCHAIN_ENDPOINT'])
    delete env[name];
  for (const name of ['LANGSMITH_TRACING', 'LANGSMITH_TRACING_V2', 'LANGCHAIN_TRACING', 'LANGCHAIN_TRACING_V2'])
    env[name] = 'false';
  return { ...env, BROWSER: 'none', LOG_LEVEL: 'error', NODE_ENV: 'production', ...extra };
}

async function whenUp(name: string, child: ChildProcess, url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited (${child.signalCode ?? child.exitCode}) before answering /ok`);
    const ok = await fetch(`${url}/ok`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  await stop(child);
  throw new Error(`${name} did not answer /ok within 60 s`);
}

/** This project's Agent Server of the tree at `root` (`env`: more of its settings, e.g. DATABASE_URI). */
export async function startOurs(
  root: string,
  nodeFlags: readonly string[],
  env: Record<string, string> = {},
): Promise<RunningServer> {
  const port = await freePort();
  const args = [...nodeFlags, '--import', 'tsx', '--import', HEAP_PROBE, 'src/services/agent-server/main.ts'];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: benchEnv({
      BENCH_HEAP_PROBE_FILE: probeFile(port),
      AGENT_SERVER_PORT: String(port),
      AGENT_SERVER_API_KEYS: API_KEY,
      APP_CONFIG: join(root, 'examples/app/langgraph.api-key.json'),
      ...env,
    }),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await whenUp(`agent server of ${root}`, child, url);
  return running(child, url, probeFile(port));
}

/** The official JS Agent Server installed in `installDir` (official-install.ts), serving `root`'s example graph. */
export async function startOfficial(
  installDir: string,
  root: string,
  nodeFlags: readonly string[],
): Promise<RunningServer> {
  const cwd = mkdtempSync(join(tmpdir(), 'bench-official-app-'));
  const app = join(root, 'examples/app');
  for (const file of readdirSync(app).filter((f) => f.endsWith('.ts'))) copyFileSync(join(app, file), join(cwd, file));
  symlinkSync(join(installDir, 'node_modules'), join(cwd, 'node_modules'));
  const dist = join(installDir, 'node_modules/@langchain/langgraph-api/dist');
  const port = await freePort();
  const payload = { port, nWorkers: OFFICIAL_JOBS, host: '127.0.0.1', cwd, graphs: { agent: './graph.ts:graph' } };
  const url = `http://127.0.0.1:${port}`;
  // The entry point's last two arguments: a parent pid (whose IPC pipe it tries, and goes on without) and the options.
  const preload = pathToFileURL(join(dist, 'preload.mjs')).href;
  const args = [...nodeFlags, '--import', 'tsx', '--import', HEAP_PROBE, '--import', preload];
  const child = spawn(
    process.execPath,
    [...args, join(dist, 'cli/entrypoint.mjs'), String(process.pid), JSON.stringify(payload)],
    {
      cwd,
      env: benchEnv({ PORT: String(port), LANGGRAPH_API_URL: url, BENCH_HEAP_PROBE_FILE: probeFile(port) }),
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const cleanup = () => rmSync(cwd, { recursive: true, force: true });
  try {
    await whenUp('official agent server', child, url);
  } catch (err) {
    cleanup();
    throw err;
  }
  return running(child, url, probeFile(port), cleanup);
}

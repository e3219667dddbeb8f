import { fork, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { FromChild, ProcessControl, ToChild } from './protocol.ts';
import {
  RevisionLoadError,
  type RevisionExit,
  type RevisionHost,
  type RevisionSpec,
  type RunningRevision,
} from './revision-host.ts';

/**
 * Each revision as its own OS process on a loopback port: `fork` of
 * agent-process.ts under tsx (an app's TypeScript loads as it is), with a
 * heap bound, an environment of its own (PATH, HOME, NODE_ENV, the app's
 * env and secrets; never the gateway's), and `@langchain/*` resolved from
 * the gateway's node_modules when the app has none (NODE_PATH for require,
 * a resolve hook for import). Its output becomes the gateway's log lines with
 * `deployment` and `revision`; API keys are checked against the Redis
 * registry by the process itself, or against `verifyKey` over IPC.
 */
export interface LocalProcessHostOptions {
  readonly log: Logger;
  /** Redis for the Agent Servers' data and the key registry; null = in memory. */
  readonly redisUrl: string | null;
  readonly keysPrefix: string;
  /** Answers a key check of a process without Redis: the key's organisation, or null. */
  readonly verifyKey: (key: string) => Promise<string | null>;
  /** Time a process has to load its app and listen. */
  readonly loadTimeoutMs: number;
  readonly logLevel?: string;
  readonly heartbeatMs?: number;
  /** After a drain, how long a process may take to exit before SIGKILL. */
  readonly killGraceMs?: number;
}

const ENTRY = fileURLToPath(new URL('./agent-process.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');
const GATEWAY_MODULES = fileURLToPath(new URL('../../../node_modules', import.meta.url));
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
/** Variables of the gateway a process inherits; nothing else (no SECRETS_KEY, REDIS_URL, ...). */
const INHERITED = ['PATH', 'HOME', 'NODE_ENV', 'TZ', 'LANG', 'TMPDIR'];

export class LocalProcessHost implements RevisionHost {
  readonly kind = 'local-process';
  private readonly running = new Set<ChildProcess>();

  constructor(private readonly o: LocalProcessHostOptions) {}

  start(spec: RevisionSpec, signal?: AbortSignal): Promise<RunningRevision> {
    const log = this.o.log.child({ deployment: spec.deploymentId, revision: spec.revisionId });
    const env: NodeJS.ProcessEnv = {};
    for (const name of INHERITED) if (process.env[name] !== undefined) env[name] = process.env[name];
    Object.assign(env, { NODE_PATH: GATEWAY_MODULES }, spec.env);
    const child = fork(ENTRY, [], {
      cwd: spec.appDir,
      env,
      execArgv: ['--import', TSX, `--max-old-space-size=${spec.memoryMb}`],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.running.add(child);
    const lastLines: string[] = [];
    pipeLog(child, log, (line) => {
      lastLines.push(line);
      if (lastLines.length > 20) lastLines.shift();
    });
    let stopRequested = false;
    const exited = new Promise<RevisionExit>((resolve) =>
      child.once('exit', (code, sig) => {
        this.running.delete(child);
        resolve({ reason: exitReason(code, sig, lastLines), requested: stopRequested });
      }),
    );
    child.on('message', (m: FromChild) => {
      if (m.type !== 'verify') return;
      this.o.verifyKey(m.key).then(
        (org) => sendTo(child, { type: 'verified', id: m.id, org }),
        () => sendTo(child, { type: 'verified', id: m.id, org: null }),
      );
    });
    const control: ProcessControl = {
      type: 'start',
      deploymentId: spec.deploymentId,
      revisionId: spec.revisionId,
      configPath: join(spec.appDir, spec.configPath),
      org: spec.org,
      redisUrl: this.o.redisUrl,
      dataPrefix: spec.dataPrefix,
      keysPrefix: this.o.keysPrefix,
      logLevel: this.o.logLevel ?? 'info',
      heartbeatMs: this.o.heartbeatMs ?? 10_000,
    };
    sendTo(child, control);

    const killGraceMs = this.o.killGraceMs ?? 5000;
    const stop = async (drainMs: number) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      stopRequested = true;
      sendTo(child, { type: 'stop', drainMs });
      const timer = setTimeout(() => child.kill('SIGKILL'), drainMs + killGraceMs);
      await exited;
      clearTimeout(timer);
    };

    return new Promise((resolve, reject) => {
      const fail = (reason: string) => {
        cleanup();
        void stop(0);
        reject(new RevisionLoadError(reason));
      };
      const timer = setTimeout(
        () => fail(`the app did not load within ${Math.round(this.o.loadTimeoutMs / 1000)} s`),
        this.o.loadTimeoutMs,
      );
      const onAbort = () => fail('cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
      const onMessage = (m: FromChild) => {
        if (m.type === 'failed') fail(m.reason);
        else if (m.type === 'ready') {
          cleanup();
          log.info({ target: m.url, graphs: m.graphs, pid: child.pid }, 'revision process ready');
          resolve({
            deploymentId: spec.deploymentId,
            revisionId: spec.revisionId,
            target: m.url,
            pid: child.pid,
            exited,
            health: () => health(m.url),
            stop,
          });
        }
      };
      const onEarlyExit = () => void exited.then((e) => fail(`the process ended before it was ready (${e.reason})`));
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        child.off('message', onMessage);
        child.off('exit', onEarlyExit);
      };
      child.on('message', onMessage);
      child.once('exit', onEarlyExit);
      if (signal?.aborted) onAbort();
    });
  }

  async close(): Promise<void> {
    const all = [...this.running];
    for (const child of all) child.kill('SIGKILL');
    await Promise.all(all.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : once(c))));
  }
}

function once(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function sendTo(child: ChildProcess, m: ToChild): void {
  if (child.connected) child.send(m, (err) => void err);
}

async function health(target: string): Promise<boolean> {
  try {
    const res = await fetch(`${target}/ok`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** The process's JSON log lines at their level, other output as lines of its stream, all with deployment and revision. */
function pipeLog(child: ChildProcess, log: Logger, remember: (line: string) => void): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const lines = createInterface({ input: child[stream]!, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (line.trim() === '') return;
      remember(line);
      let entry: Record<string, unknown> | null = null;
      if (line.startsWith('{')) {
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          entry = null;
        }
      }
      if (entry === null) {
        log[stream === 'stderr' ? 'warn' : 'info']({ stream }, line.slice(0, 8192));
        return;
      }
      const { level, msg, time: _time, pid: _pid, hostname: _host, ...fields } = entry;
      const name = LEVELS[Number(level)] ?? 'info';
      log[name as 'info'].call(log, fields, typeof msg === 'string' ? msg : '');
    });
  }
}

/** Why a process ended, for a person: its exit, and the last line that tells (an out-of-memory, an uncaught error). */
function exitReason(code: number | null, signal: NodeJS.Signals | null, lines: readonly string[]): string {
  const how = signal !== null ? `killed by ${signal}` : `exit code ${code}`;
  if (lines.some((l) => /heap out of memory|Allocation failed/i.test(l))) return `${how}: out of memory`;
  const telling = [...lines].reverse().find((l) => /error/i.test(l) && !l.startsWith('{') && !/^\s+at /.test(l));
  return telling ? `${how}: ${telling.trim().slice(0, 300)}` : how;
}

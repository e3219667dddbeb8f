import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withRunPrefixes } from './run-prefixes.ts';

/**
 * `node bin/gateway.js start` as a child process, for tests that need the
 * real program: its ports, signals of the test's choosing, and how it exited
 * (code and signal). PORT and ADMIN_PORT are 0 unless given; both are read
 * from the `gateway listening` log line. spawn-gateway.ts adds a graceful stop. `options.prefix` runs it under another
 * command that execs it (`ip netns exec <ns>`: the pid stays the gateway's), and `options.host` is the address its
 * URLs name then (where HOST / ADMIN_HOST make it listen).
 */
export interface GatewayProcess {
  readonly pid: number;
  readonly port: number;
  readonly adminPort: number;
  /** `http://<host>:<port>` of the edge (host 127.0.0.1 unless given). */
  readonly url: string;
  /** `http://<host>:<adminPort>`. */
  readonly adminUrl: string;
  /** Resolves when the process has exited, with its exit code or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal(sig: NodeJS.Signals): void;
  /** stdout JSON lines parsed so far. */
  lines(): Record<string, unknown>[];
  /** The first stdout line matching `pred`, waiting up to `timeoutMs`. */
  waitForLine(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** stdout and stderr text so far. */
  output(): string;
  /** SIGKILL if still running; resolves once it has exited. For teardown. */
  kill(): Promise<void>;
}

const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Children still running, killed if the test process exits without stopping them. */
const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

export interface GatewayProcessOptions {
  /** A command that execs the gateway's own, e.g. `['ip', 'netns', 'exec', 'ns-1']`. */
  readonly prefix?: readonly string[];
  /** The address the URLs name (default 127.0.0.1). */
  readonly host?: string;
}

export async function startGatewayProcess(
  env: Record<string, string>,
  readyTimeoutMs = 30_000,
  options: GatewayProcessOptions = {},
): Promise<GatewayProcess> {
  const [command, ...args] = [...(options.prefix ?? []), process.execPath, BIN, 'start'];
  const host = options.host ?? '127.0.0.1';
  const child = spawn(command, args, {
    cwd: ROOT,
    // A clean environment: nothing of the test runner's own settings leaks into the gateway.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      ADMIN_PORT: '0',
      ...withRunPrefixes(env),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close', not 'exit': by then stdout has been read to its end.
    child.once('close', (code, signal) => (live.delete(child), resolve({ code, signal }))),
  );
  let stdout = '';
  let all = '';
  child.stdout.on('data', (d: Buffer) => ((stdout += d.toString()), (all += d.toString())));
  child.stderr.on('data', (d: Buffer) => (all += d.toString()));
  const running = () => child.exitCode === null && child.signalCode === null;

  const lines = () =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return []; // a line still being written
        }
      });

  const waitForLine = async (pred: (line: Record<string, unknown>) => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines().find(pred);
      if (found) return found;
      if (!running()) {
        await exited; // the rest of stdout
        const last = lines().find(pred);
        if (last) return last;
        throw new Error(
          `gateway exited (${child.exitCode ?? child.signalCode}) without that log line; output:\n${all}`,
        );
      }
      if (Date.now() > deadline) throw new Error(`no gateway log line matched within ${timeoutMs} ms; output:\n${all}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  const kill = async () => {
    if (running()) child.kill('SIGKILL');
    await exited;
  };

  let listening: Record<string, unknown>;
  try {
    listening = await waitForLine((l) => l.msg === 'gateway listening', readyTimeoutMs);
  } catch (err) {
    await kill();
    throw err;
  }
  const port = listening.port as number;
  const adminPort = listening.adminPort as number;
  return {
    pid: child.pid!,
    port,
    adminPort,
    url: `http://${host}:${port}`,
    adminUrl: `http://${host}:${adminPort}`,
    exited,
    signal: (sig) => void (running() && child.kill(sig)),
    lines,
    waitForLine,
    output: () => all,
    kill,
  };
}

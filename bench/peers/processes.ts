/**
 * Child processes for the edge benchmark: start a server pinned to a core,
 * wait for its "listening" JSON line, then drain its stdout unread (a pipe
 * nobody reads would block the server's logger); read a process's CPU time
 * from /proc; stop what was started, by pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * Two CPUs this process may run on (first: the process under test; second: load generator, upstream, this runner), or
 * null.
 */
export function pinningCpus(): readonly [number, number] | null {
  const cpus = allowedCpus();
  return cpus.length >= 2 ? [cpus[0]!, cpus[1]!] : null;
}

/**
 * Where the workers targets run: with 3 or more CPUs, the edge on all but the last and the load generator on the last;
 * with fewer, both on every CPU (on 2, pinning n workers to one would measure nothing), and the load generator then
 * competes with the workers. Given explicitly, as a list: a child would otherwise inherit this runner's own pinning.
 * Null where taskset is missing.
 */
export function workersPinning(): { readonly edgeCpus: string | null; readonly loadCpu: number | string | null } {
  const cpus = allowedCpus();
  if (cpus.length === 0) return { edgeCpus: null, loadCpu: null };
  if (cpus.length < 3) return { edgeCpus: cpus.join(','), loadCpu: cpus.join(',') };
  return { edgeCpus: cpus.slice(0, -1).join(','), loadCpu: cpus.at(-1)! };
}

/** The CPUs this process may run on (taskset), or [] where that cannot be read or set. */
function allowedCpus(): number[] {
  if (process.platform !== 'linux' || spawnSync('taskset', ['-V']).status !== 0) return [];
  const out = spawnSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' }).stdout ?? '';
  const list = out.split(':').pop()?.trim() ?? '';
  return list.split(',').flatMap((part) => {
    const [a, b] = part.split('-').map(Number);
    if (a === undefined || Number.isNaN(a)) return [];
    return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
}

/** Moves this (already running) process onto `cpu`. */
export function pinSelf(cpu: number): boolean {
  return spawnSync('taskset', ['-pc', String(cpu), String(process.pid)]).status === 0;
}

/**
 * `node <args>`, under `taskset -c <cpu>` when a cpu (or a list, `0,1,2`) is given. taskset execs node, so the pid is
 * node's.
 */
export function nodeCommand(args: readonly string[], cpu: number | string | null): [string, string[]] {
  return cpu === null ? [process.execPath, [...args]] : ['taskset', ['-c', String(cpu), process.execPath, ...args]];
}

export interface Service {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** The last lines the process wrote on stderr (shown when something fails). */
  stderrTail(): string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** A loopback port that was free a moment ago (for a server that does not say where it listens). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * Starts a server process and resolves once it prints a JSON line with
 * `"msg"` ending in "listening" and a `"port"`, or, when `knownPort` is given
 * (a server whose log level hides that line), once that port accepts a
 * connection. From then on its stdout is read and thrown away: the process
 * keeps logging as it would in production, and the pipe never fills.
 */
export function startService(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cpu: number | string | null,
  knownPort?: number,
  timeoutMs = 20_000,
): Promise<Service> {
  const [cmd, argv] = nodeCommand(args, cpu);
  const child = spawn(cmd, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const stderr: string[] = [];
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr.push(s);
    if (stderr.length > 50) stderr.shift();
  });
  const stderrTail = () => stderr.join('').split('\n').slice(-20).join('\n');

  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    const fail = (why: string) => {
      clearTimeout(timer);
      lines.close();
      void stop(child);
      reject(new Error(`${name}: ${why}\n${stderrTail()}`));
    };
    let ready = false;
    const timer = setTimeout(() => fail(`not listening within ${timeoutMs} ms`), timeoutMs);
    child.once('exit', (code, signal) => fail(`exited (${signal ?? code}) before listening`));
    const listening = (port: number) => {
      if (ready) return;
      ready = true;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.once('exit', () => running.delete(child));
      lines.removeAllListeners('line');
      lines.close();
      child.stdout.resume(); // from here on: read and discard
      resolve({ name, pid: child.pid!, port, url: `http://127.0.0.1:${port}`, stderrTail, stop: () => stop(child) });
    };
    lines.on('line', (line) => {
      let msg: { msg?: unknown; port?: unknown };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      if (typeof msg.msg === 'string' && msg.msg.endsWith('listening') && typeof msg.port === 'number')
        listening(msg.port);
    });
    if (knownPort !== undefined) {
      const poll = async () => {
        while (!ready && child.exitCode === null) {
          if (await accepts(knownPort)) return listening(knownPort);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      void poll();
    }
  });
}

/** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. */
export function stop(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Stops every process this module started and that is still running. */
export function stopAll(): Promise<void> {
  return Promise.all([...running].map((c) => stop(c))).then(() => undefined);
}

let clockTicks: number | undefined;

/** utime + stime of a process in seconds (Linux /proc), or null when it cannot be read. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3 of proc(5)
    clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return null;
  }
}

/**
 * utime + stime of a process and of every process below it (an edge's workers), in seconds, or null when the process
 * cannot be read. Descendants are found by their parent pid in /proc/<pid>/stat; one that exited is no longer counted.
 */
export function treeCpuSeconds(pid: number): number | null {
  const own = cpuSeconds(pid);
  if (own === null) return null;
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = own;
  const below = [...(parents.get(pid) ?? [])];
  while (below.length > 0) {
    const child = below.pop()!;
    total += cpuSeconds(child) ?? 0;
    below.push(...(parents.get(child) ?? []));
  }
  return total;
}

/** The command name of a process (/proc/<pid>/comm), or null. */
export function processName(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * Busy, interrupt (of which loopback networking) and stolen time of one CPU, in seconds (Linux /proc/stat), or null.
 */
export function coreSeconds(cpu: number): { busy: number; irq: number; steal: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${cpu} `));
    if (!line) return null;
    clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
    // user nice system idle iowait irq softirq steal
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return {
      busy: (user! + nice! + system! + irq! + softirq!) / clockTicks,
      irq: (irq! + softirq!) / clockTicks,
      steal: steal! / clockTicks,
    };
  } catch {
    return null;
  }
}

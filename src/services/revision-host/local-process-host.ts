import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { DEFAULT_ORG } from '../../keys/bootstrap.ts';
import { CgroupParent } from '../../sandbox/cgroup.ts';
import { probeSandbox, type SandboxMode, type SandboxSetting } from '../../sandbox/probe.ts';
import { CHANNEL_FD, onMessages, writeMessage } from './channel.ts';
import { channelBudget, FLOOD_REASON } from './channel-budget.ts';
import { launchArgv } from './launch.ts';
import { describe, parseFromChild } from './messages.ts';
import { pipeOutput } from './output-log.ts';
import type { ProcessControl, ToChild } from './protocol.ts';
import {
  RevisionLoadError,
  type RevisionExit,
  type RevisionHost,
  type RevisionSpec,
  type RunningRevision,
} from './revision-host.ts';

/**
 * Each revision as its own OS process on a loopback port the host chose:
 * node under tsx running agent-process.ts (launch.ts says how: the bubblewrap
 * sandbox, a cgroup, an environment of its own). Its output becomes the
 * gateway's log lines with `deployment` and `revision` (output-log.ts); its
 * messages come over fd 3 and are checked and accepted only in the phase that
 * expects them (`ready`/`failed` while loading, `verify` after), so nothing it
 * writes can throw in the gateway or choose its own route target. Without a
 * sandbox only the gateway's own organisation's deployments run, unless every
 * tenant is trusted.
 */
export interface LocalProcessHostOptions {
  readonly log: Logger;
  /**
   * The Redis URL a revision's process gets for its Agent Server's data (credentials of its deployment's own, from
   * the control plane: deployment-redis-users.ts), or null = in memory. It may reject with a RevisionLoadError.
   */
  readonly redisUrl: ((spec: RevisionSpec) => Promise<string | null>) | null;
  /** Answers a key check of a process: the key's organisation, or null. */
  readonly verifyKey: (key: string) => Promise<string | null>;
  /** Time a process has to load its app and listen. */
  readonly loadTimeoutMs: number;
  readonly logLevel?: string;
  readonly heartbeatMs?: number;
  /** The operator's TTL_SWEEP_SECONDS (in ms) for every revision's Agent Server; default 1 min. */
  readonly ttlSweepMs?: number;
  /** The operator's WEBHOOK_HOSTS_ALLOWED for every revision's Agent Server; default none. */
  readonly webhookHostsAllowed?: readonly string[];
  /** After a drain, how long a process may take to exit before SIGKILL. */
  readonly killGraceMs?: number;
  /** SANDBOX (default auto: bwrap when it works here). */
  readonly sandbox?: SandboxSetting;
  /** TRUST_ALL_TENANTS: without a sandbox, run every organisation's deployments all the same. */
  readonly trustAllTenants?: boolean;
  /** Each line a process prints, with whose process it is (known here, never read from the line). */
  readonly onOutput?: (
    owner: { deploymentId: string; revisionId: string },
    stream: 'stdout' | 'stderr',
    line: string,
  ) => void;
}

export class LocalProcessHost implements RevisionHost {
  readonly kind = 'local-process';
  readonly sandbox: SandboxMode;
  private readonly running = new Set<ChildProcess>();
  private readonly cgroups: CgroupParent | null;

  constructor(private readonly o: LocalProcessHostOptions) {
    const probe = probeSandbox(o.sandbox ?? 'auto');
    this.sandbox = probe.mode;
    this.cgroups = CgroupParent.open(`gateway-${process.pid}`);
    const limits = this.cgroups ? 'cgroup' : 'rlimit';
    if (probe.mode === 'bwrap') o.log.info({ sandbox: 'bwrap', limits }, 'revisions run in a bubblewrap sandbox');
    else
      o.log.warn(
        { sandbox: 'off', why: probe.why, limits, trustAllTenants: o.trustAllTenants === true },
        o.trustAllTenants
          ? 'revisions run without a sandbox, and TRUST_ALL_TENANTS=1 runs every organisation: tenants can read each other'
          : `revisions run without a sandbox: only deployments of the organisation "${DEFAULT_ORG}" run (TRUST_ALL_TENANTS=1 runs all)`,
      );
  }

  async start(spec: RevisionSpec, signal?: AbortSignal): Promise<RunningRevision> {
    if (this.sandbox === 'off' && !this.o.trustAllTenants && spec.org !== DEFAULT_ORG)
      throw new RevisionLoadError(
        'this gateway has no sandbox for deployments (SANDBOX) and runs only its own organisation\u2019s; ' +
          'TRUST_ALL_TENANTS=1 runs every organisation',
      );
    const redisUrl = this.o.redisUrl ? await this.o.redisUrl(spec) : null;
    const port = await freePort();
    const home = mkdtempSync(join(tmpdir(), 'revision-home-'));
    const launch = launchArgv(spec, this.sandbox, this.cgroups, home);
    const child = spawn(launch.command, launch.args, {
      cwd: spec.appDir,
      env: launch.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    return this.supervise(spec, child, launch.cgroup, home, { ...this.control(spec, redisUrl), port }, signal);
  }

  private supervise(
    spec: RevisionSpec,
    child: ChildProcess,
    cgroup: ReturnType<typeof launchArgv>['cgroup'],
    home: string,
    start: ProcessControl,
    signal?: AbortSignal,
  ): Promise<RunningRevision> {
    const log = this.o.log.child({ deployment: spec.deploymentId, revision: spec.revisionId });
    const channel = child.stdio[CHANNEL_FD] as Socket;
    channel.on('error', () => channel.destroy());
    this.running.add(child);
    const lastLines: string[] = [];
    const owner = { deploymentId: spec.deploymentId, revisionId: spec.revisionId };
    pipeOutput(
      { stdout: child.stdout!, stderr: child.stderr! },
      {
        log,
        remember: (line) => {
          lastLines.push(line);
          if (lastLines.length > 20) lastLines.shift();
        },
        keep: this.o.onOutput && ((stream, line) => this.o.onOutput!(owner, stream, line)),
      },
    );
    let stopRequested = false;
    const exited = new Promise<RevisionExit>((resolve) => {
      const done = (code: number | null, sig: NodeJS.Signals | null, spawnError?: Error) => {
        this.running.delete(child);
        const oom = cgroup?.oomKilled() ?? false;
        cgroup?.remove();
        rmSync(home, { recursive: true, force: true });
        const reason = budget.flooded
          ? FLOOD_REASON
          : spawnError
            ? `could not start: ${spawnError.message}`
            : exitReason(code, sig, lastLines, oom ? spec.memoryMb : null);
        resolve({ reason, requested: stopRequested });
      };
      child.once('exit', (code, sig) => done(code, sig));
      child.once('error', (err) => child.pid === undefined && done(null, null, err));
    });
    const target = `http://127.0.0.1:${start.port}`;
    const send = (m: ToChild) => writeMessage(channel, m);
    let phase: 'loading' | 'serving' | 'over' = 'loading';
    // Counted, logged once a second at most; past its budget the process is closed (channel-budget.ts).
    const budget = channelBudget(channel, { log, onFlood: () => child.kill('SIGKILL') });
    const ignore = (m: unknown, why: string) => budget.ignored(describe(m), why);

    const killGraceMs = this.o.killGraceMs ?? 5000;
    const stop = async (drainMs: number) => {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      stopRequested = true;
      send({ type: 'stop', drainMs });
      const timer = setTimeout(() => child.kill('SIGKILL'), drainMs + killGraceMs);
      await exited;
      clearTimeout(timer);
    };
    send(start);

    return new Promise((resolve, reject) => {
      const fail = (reason: string) => {
        if (phase !== 'loading') return;
        phase = 'over';
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        void stop(0);
        reject(new RevisionLoadError(reason));
      };
      const timer = setTimeout(
        () => fail(`the app did not load within ${Math.round(this.o.loadTimeoutMs / 1000)} s`),
        this.o.loadTimeoutMs,
      );
      const onAbort = () => fail('cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
      void exited.then((e) => fail(`the process ended before it was ready (${e.reason})`));
      onMessages(channel, (raw) => {
        const m = parseFromChild(raw);
        if (m === null) return ignore(raw, 'not a message of the protocol');
        if (m.type === 'verify') {
          if (phase !== 'serving') return ignore(raw, 'a key check before the revision is ready');
          return void this.o.verifyKey(m.key).then(
            (org) => send({ type: 'verified', id: m.id, org }),
            () => send({ type: 'verified', id: m.id, org: null }),
          );
        }
        if (phase !== 'loading') return ignore(raw, `${m.type} once the revision is ${phase}`);
        if (m.type === 'failed') return fail(m.reason);
        phase = 'serving';
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        log.info({ target, graphs: m.graphs, pid: child.pid, sandbox: this.sandbox }, 'revision process ready');
        resolve({
          deploymentId: spec.deploymentId,
          revisionId: spec.revisionId,
          target,
          pid: child.pid,
          exited,
          health: () => health(target),
          stop,
        });
      });
      if (signal?.aborted) onAbort();
    });
  }

  private control(spec: RevisionSpec, redisUrl: string | null): Omit<ProcessControl, 'port'> {
    return {
      type: 'start',
      deploymentId: spec.deploymentId,
      revisionId: spec.revisionId,
      configPath: join(spec.appDir, spec.configPath),
      sourcePrefix: spec.sourcePrefix ?? '',
      org: spec.org,
      redisUrl,
      dataPrefix: spec.dataPrefix,
      logLevel: this.o.logLevel ?? 'info',
      heartbeatMs: this.o.heartbeatMs ?? 10_000,
      ttlSweepMs: this.o.ttlSweepMs ?? 60_000,
      webhookHostsAllowed: this.o.webhookHostsAllowed ?? [],
    };
  }

  async close(): Promise<void> {
    const all = [...this.running];
    for (const child of all) child.kill('SIGKILL');
    await Promise.all(all.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : once(c))));
    this.cgroups?.close();
  }
}

function once(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A loopback port free now, for the revision to listen on (it fails to load, saying so, if another took it since). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
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

/** Why a process ended, for a person: over its memory (the cgroup says), its exit, and the last line that tells. */
function exitReason(
  code: number | null,
  signal: NodeJS.Signals | null,
  lines: readonly string[],
  oomOfMb: number | null,
): string {
  const how = signal !== null ? `killed by ${signal}` : `exit code ${code}`;
  if (oomOfMb !== null) return `${how}: out of memory (over its ${oomOfMb} MiB plus the runtime's)`;
  if (lines.some((l) => /heap out of memory|Allocation failed/i.test(l))) return `${how}: out of memory`;
  const telling = [...lines].reverse().find((l) => /error/i.test(l) && !l.startsWith('{') && !/^\s+at /.test(l));
  return telling ? `${how}: ${telling.trim().slice(0, 300)}` : how;
}

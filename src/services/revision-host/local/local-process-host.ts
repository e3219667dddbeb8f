import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { DEFAULT_ORG } from '../../../keys/bootstrap.ts';
import { CgroupParent } from './sandbox/cgroup.ts';
import { netnsStdio, releaseNetwork, RESOLV_CONF, type NetworkProbe } from './sandbox/network.ts';
import { probeSandbox, type SandboxMode, type SandboxSetting } from './sandbox/probe.ts';
import { socketTarget } from '../../../proxy/socket-target.ts';
import { agentSocket, socketHealth, LISTEN_FD } from './agent-socket.ts';
import { CHANNEL_FD, onMessages, writeMessage } from './channel.ts';
import { channelBudget, FLOOD_REASON } from './channel-budget.ts';
import { exitReason } from './exit-reason.ts';
import { launchArgv } from './launch.ts';
import { describe, parseFromChild } from './messages.ts';
import { pipeOutput } from './output-log.ts';
import { startMessage } from './start-message.ts';
import type { ProcessControl, ToChild } from './protocol.ts';
import {
  DEFAULT_REVISION_REDIS_LIMITS,
  openRevisionRedis,
  type RevisionRedisAccess,
  type RevisionRedisLimits,
} from './revision-redis.ts';
import { openRevisionDatabase, type RevisionDatabase, type RevisionDatabaseAccess } from './revision-database.ts';
import {
  RevisionLoadError,
  type RevisionExit,
  type RevisionHost,
  type RevisionSpec,
  type RunningRevision,
} from '../revision-host.ts';

/**
 * Each revision as its own OS process serving on a Unix socket the host made
 * in a run folder of its own (agent-socket.ts): node under tsx running
 * agent-process.ts (launch.ts says how: the bubblewrap sandbox, a network
 * namespace, a cgroup, an environment of its own). Its output becomes the
 * gateway's log lines with `deployment` and `revision` (output-log.ts); its
 * messages come over fd 3 and are checked and accepted only in the phase that
 * expects them (`ready`/`failed` while loading, `verify` after), so nothing it
 * writes can throw in the gateway or choose its own route target. Without a
 * sandbox and a network namespace only the gateway's own organisation's
 * deployments run, unless every tenant is trusted.
 */
export interface LocalProcessHostOptions {
  readonly log: Logger;
  /**
   * The Redis a revision's Agent Server keeps its data in (its deployment's own user, from the control plane:
   * deployment-redis-users.ts), reached only through a forwarder the host runs (revision-redis.ts), or null = in
   * memory. It may reject with a RevisionLoadError.
   */
  readonly redis: ((spec: RevisionSpec) => Promise<RevisionRedisAccess | null>) | null;
  /**
   * The PostgreSQL database of a revision's deployment (DEPLOYMENTS_DATABASE_URI: deployment-databases.ts), reached
   * only through a forwarder the host runs (revision-database.ts), or null = none (DATABASE_URI unset). It may reject
   * with a RevisionLoadError.
   */
  readonly database?: ((spec: RevisionSpec) => Promise<RevisionDatabaseAccess | null>) | null;
  /** The bounds of each revision's forwarder (DEPLOYMENT_REDIS_*); default DEFAULT_REVISION_REDIS_LIMITS. */
  readonly redisLimits?: RevisionRedisLimits;
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
  /** The network revisions get, decided at start (network.ts probeNetwork); default the host's. */
  readonly network?: NetworkProbe;
  /** SANDBOX_NETWORK_ALLOW: private IPv4 ranges a revision may reach all the same. */
  readonly networkAllow?: readonly string[];
  /** TRUST_ALL_TENANTS: without a sandbox, run every organisation's deployments all the same. */
  readonly trustAllTenants?: boolean;
  /**
   * The gateway's cgroup folder, shared with the builds (an organisation's group holds its revisions and its build
   * steps: one CPU share); null = none (RLIMITs); absent = the host opens its own and closes it.
   */
  readonly cgroups?: CgroupParent | null;
  /** ORG_CPUS: CPUs all of one organisation's processes share (default 1). */
  readonly orgCpus?: number;
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
  /** The revisions' network: a namespace of their own (`pasta`: with egress; `none`) or the host's. */
  readonly network: NetworkProbe;
  private readonly running = new Set<ChildProcess>();
  private readonly cgroups: CgroupParent | null;
  private readonly ownCgroups: boolean;

  constructor(private readonly o: LocalProcessHostOptions) {
    const probe = probeSandbox(o.sandbox ?? 'auto');
    this.sandbox = probe.mode;
    // Without bwrap the app would be root of its namespace, able to route anywhere again: the host's network, said so.
    this.network =
      probe.mode === 'bwrap'
        ? (o.network ?? { mode: 'host', why: 'not asked for' })
        : { mode: 'host', why: 'no sandbox' };
    this.ownCgroups = o.cgroups === undefined;
    this.cgroups = o.cgroups === undefined ? CgroupParent.open(`gateway-${process.pid}`) : o.cgroups;
    const fields = { sandbox: probe.mode, network: this.network.mode, limits: this.cgroups ? 'cgroup' : 'rlimit' };
    if (this.isolated)
      o.log.info(fields, `revisions run in a bubblewrap sandbox with a network of their own (${this.network.mode})`);
    else
      o.log.warn(
        { ...fields, why: probe.why ?? this.network.why, trustAllTenants: o.trustAllTenants === true },
        o.trustAllTenants
          ? 'revisions are not isolated (no sandbox or no network namespace), and TRUST_ALL_TENANTS=1 runs every organisation: tenants can reach each other'
          : `revisions are not isolated (no sandbox or no network namespace): only deployments of the organisation "${DEFAULT_ORG}" run (TRUST_ALL_TENANTS=1 runs all)`,
      );
  }

  /** Whether a tenant's process is kept from the others and from the host: bwrap and a network namespace. */
  get isolated(): boolean {
    return this.sandbox === 'bwrap' && this.network.mode !== 'host';
  }

  refusalFor(org: string | null): string | null {
    if (this.isolated || this.o.trustAllTenants || org === DEFAULT_ORG) return null;
    const missing =
      this.sandbox === 'off' ? 'no sandbox for deployments (SANDBOX)' : 'no network of their own (SANDBOX_NETWORK)';
    return `this gateway has ${missing} and runs only its own organisation\u2019s; TRUST_ALL_TENANTS=1 runs every organisation`;
  }

  async start(spec: RevisionSpec, signal?: AbortSignal): Promise<RunningRevision> {
    const refused = this.refusalFor(spec.org);
    if (refused !== null) throw new RevisionLoadError(refused);
    const access = this.o.redis ? await this.o.redis(spec) : null;
    const dbAccess = this.o.database ? await this.o.database(spec) : null;
    // Its Redis: a socket of a forwarder this host runs (no URL, no password), in a folder bound into the sandbox.
    const owner = { deployment: spec.deploymentId, revision: spec.revisionId };
    const redis =
      access &&
      (await openRevisionRedis(access, this.o.redisLimits ?? DEFAULT_REVISION_REDIS_LIMITS, this.o.log.child(owner)));
    // The run folder is the host's (0700): the socket the edge reaches, the resolver file, HOME without bwrap.
    const runDir = mkdtempSync(join(tmpdir(), 'revision-run-'));
    // Its database: likewise a socket of a forwarder (its role's password in DATABASE_URI, never the operator's).
    let database: RevisionDatabase | null = null;
    const cleanUp = () => {
      rmSync(runDir, { recursive: true, force: true });
      void redis?.close();
      void database?.close();
    };
    let socket: Awaited<ReturnType<typeof agentSocket>>;
    try {
      database = dbAccess && (await openRevisionDatabase(dbAccess, this.o.log.child(owner)));
      mkdirSync(join(runDir, 'home'));
      writeFileSync(join(runDir, 'resolv.conf'), RESOLV_CONF);
      socket = await agentSocket(runDir);
    } catch (err) {
      cleanUp();
      throw err;
    }
    const network = { mode: this.network.mode, allow: this.o.networkAllow ?? [] };
    const launch = launchArgv(spec, {
      sandbox: this.sandbox,
      network,
      cgroups: this.cgroups,
      ...(this.o.orgCpus !== undefined && { orgCpus: this.o.orgCpus }),
      runDir,
      hostFolders: [...(redis ? [redis.dir] : []), ...(database ? [database.dir] : [])],
      hostEnv: database?.env ?? {},
    });
    const stdio = netnsStdio<'ignore' | 'pipe' | number>(['ignore', 'pipe', 'pipe', 'pipe', socket.fd], network);
    const child = spawn(launch.command, launch.args, { cwd: spec.appDir, env: launch.env, stdio });
    // The child holds the listening socket now: the gateway never accepts on it.
    socket.handedOver();
    const control = { ...startMessage(spec, redis?.socketPath ?? null, this.o), listenFd: LISTEN_FD };
    const networked = network.mode === 'host' ? Promise.resolve() : releaseNetwork(child, network);
    return this.supervise(spec, child, launch.cgroup, cleanUp, socket.path, control, networked, signal);
  }

  private supervise(
    spec: RevisionSpec,
    child: ChildProcess,
    cgroup: ReturnType<typeof launchArgv>['cgroup'],
    cleanUp: () => void,
    socketPath: string,
    start: ProcessControl,
    networked: Promise<void>,
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
        cleanUp();
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
    const target = socketTarget(socketPath);
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
      networked.catch((err: Error) => fail(`its network could not be set up: ${err.message}`));
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
          health: () => socketHealth(socketPath),
          stop,
        });
      });
      if (signal?.aborted) onAbort();
    });
  }

  async close(): Promise<void> {
    const all = [...this.running];
    for (const child of all) child.kill('SIGKILL');
    await Promise.all(all.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : once(c))));
    if (this.ownCgroups) this.cgroups?.close();
  }
}

function once(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

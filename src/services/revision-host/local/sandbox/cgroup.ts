import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Resource limits of one revision as cgroup v1 groups (memory, pids, cpu),
 * one folder per revision under a folder of this gateway, itself under the
 * gateway's own group (so the host's limits on the gateway still hold). The
 * process joins them before it execs (see `joinArgv`), so nothing it starts
 * escapes them. Without writable cgroups (an unprivileged container), there is
 * none and the caller falls back to RLIMITs.
 *
 * Between the gateway's folder and a process's group sits its organisation's (`org`): a CPU quota every revision and
 * build step of the organisation shares, so twenty deployments of one tenant get the organisation's CPUs, not twenty.
 */
export interface Limits {
  readonly memoryBytes: number;
  readonly pids: number;
  /** CPUs it may use at most (CFS quota), e.g. 1. */
  readonly cpus: number;
}

const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
type Controller = (typeof CONTROLLERS)[number];
const MOUNT = '/sys/fs/cgroup';

export class CgroupParent {
  private readonly orgs = new Map<string, CgroupParent>();

  private constructor(
    private readonly dirs: Readonly<Record<Controller, string>>,
    /** This folder's own CPU quota (µs per 100 ms), when it has one: cgroup v1 refuses a child's above it (EINVAL). */
    private readonly quotaUs: number | null = null,
  ) {}

  /** This gateway's folder in each controller, made now; null when any cannot be made (no cgroup v1, no rights). */
  static open(name: string): CgroupParent | null {
    const own = ownPaths();
    const dirs = {} as Record<Controller, string>;
    try {
      for (const c of CONTROLLERS) {
        const dir = join(MOUNT, c, own.get(c) ?? '/', name);
        if (!existsSync(join(MOUNT, c, 'cgroup.procs'))) return null;
        mkdirSync(dir, { recursive: true });
        dirs[c] = dir;
        removeStale(dirname(dir), name);
      }
    } catch {
      return null;
    }
    return new CgroupParent(dirs);
  }

  /**
   * The organisation's group (made on first use, kept until close): `cpus` CPUs for all its processes together. Its
   * folder is a digest of the name, so an organisation id never becomes a path.
   */
  org(org: string, cpus: number): CgroupParent {
    const name = `org-${createHash('sha256').update(org).digest('hex').slice(0, 16)}`;
    let group = this.orgs.get(name);
    // Still there: a gateway's folder is removed when empty (close, a stale sweep), and a group made again below a
    // removed one would have no quota.
    if (group && group.exists()) return group;
    const dirs = {} as Record<Controller, string>;
    for (const c of CONTROLLERS) {
      dirs[c] = join(this.dirs[c], name);
      mkdirSync(dirs[c], { recursive: true });
    }
    const quotaUs = Math.round(cpus * 100_000);
    writeFileSync(join(dirs.cpu, 'cpu.cfs_period_us'), '100000');
    writeFileSync(join(dirs.cpu, 'cpu.cfs_quota_us'), String(quotaUs));
    group = new CgroupParent(dirs, quotaUs);
    this.orgs.set(name, group);
    return group;
  }

  private exists(): boolean {
    return CONTROLLERS.every((c) => existsSync(this.dirs[c]));
  }

  /** A group of the revision with its limits; throws when the kernel refuses one. */
  create(id: string, limits: Limits): RevisionCgroup {
    const dirs = {} as Record<Controller, string>;
    for (const c of CONTROLLERS) {
      dirs[c] = join(this.dirs[c], id);
      mkdirSync(dirs[c], { recursive: true });
    }
    writeFileSync(join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // With swap accounting, the same bound for memory plus swap: over it is over, not swapped out.
    tryWrite(join(dirs.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    writeFileSync(join(dirs.pids, 'pids.max'), String(limits.pids));
    writeFileSync(join(dirs.cpu, 'cpu.cfs_period_us'), '100000');
    const quotaUs = Math.round(limits.cpus * 100_000);
    writeFileSync(join(dirs.cpu, 'cpu.cfs_quota_us'), String(Math.min(quotaUs, this.quotaUs ?? quotaUs)));
    return new RevisionCgroup(dirs);
  }

  /** Removes this gateway's folders, its organisations' included (empty once every process's group is). */
  close(): void {
    for (const c of CONTROLLERS) rmdirTree(this.dirs[c]);
  }
}

export class RevisionCgroup {
  constructor(private readonly dirs: Readonly<Record<Controller, string>>) {}

  /** `cgroup.procs` of each group: a process writes its pid to each before exec (joinArgv). */
  get procsFiles(): string[] {
    return CONTROLLERS.map((c) => join(this.dirs[c], 'cgroup.procs'));
  }

  /** Whether the kernel killed a process of the group for going over its memory. */
  oomKilled(): boolean {
    try {
      return /^oom_kill [1-9]/m.test(readFileSync(join(this.dirs.memory, 'memory.oom_control'), 'utf8'));
    } catch {
      return false;
    }
  }

  /** Whether a fork in the group failed for being over `pids.max` (its `max` event count). */
  pidsExhausted(): boolean {
    try {
      return /^max [1-9]/m.test(readFileSync(join(this.dirs.pids, 'pids.events'), 'utf8'));
    } catch {
      return false;
    }
  }

  /** Kills every process of the group now (a step over its bound), leaving the group for `remove`. */
  kill(): void {
    for (const pid of readPids(join(this.dirs.pids, 'cgroup.procs'))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }

  /** Kills whatever is left in the group and removes it (call once the process has exited). */
  remove(): void {
    for (const c of CONTROLLERS) {
      for (const pid of readPids(join(this.dirs[c], 'cgroup.procs'))) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      tryRmdir(this.dirs[c]);
    }
  }
}

/** A shell that joins the groups (`$$` is the shell, which then becomes the command) and execs the command. */
export function joinArgv(procsFiles: readonly string[], argv: readonly string[]): string[] {
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return ['/bin/sh', '-c', script, 'sh', ...procsFiles, '--', ...argv];
}

/** The gateway's own group per controller (`4:memory:/a/b` → memory → /a/b). */
function ownPaths(): Map<string, string> {
  const paths = new Map<string, string>();
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, names, path] = line.split(':');
      if (names && path) for (const n of names.split(',')) paths.set(n, path);
    }
  } catch {
    // not Linux
  }
  return paths;
}

/** Empty folders of gateways that ended without closing theirs (`gateway-<pid>` of a pid that is gone). */
function removeStale(parent: string, own: string): void {
  const prefix = own.replace(/\d+$/, '');
  try {
    for (const entry of readdirSync(parent)) {
      const pid = Number(entry.slice(prefix.length));
      if (entry === own || !entry.startsWith(prefix) || !Number.isInteger(pid) || pid <= 0 || alive(pid)) continue;
      rmdirTree(join(parent, entry));
    }
  } catch {
    // not listable: left as it is
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPids(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function tryWrite(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // not there (no swap accounting)
  }
}

/** Removes the empty groups below `dir` (organisations, then their processes' groups), deepest first, then `dir`. */
function rmdirTree(dir: string): void {
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) rmdirTree(join(dir, e.name));
  } catch {
    // gone, or not listable
  }
  tryRmdir(dir);
}

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // still in use, or gone
  }
}

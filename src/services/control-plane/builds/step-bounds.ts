import { readdirSync, statSync } from 'node:fs';
import { joinArgv, type CgroupParent, type RevisionCgroup } from '../../revision-host/local/sandbox/cgroup.ts';
import { mib } from './folder-size.ts';

/**
 * The bounds of one build step (a `git clone`, an `npm install` and every script it runs), as a revision's are: a
 * cgroup of its own (memory, pids, CPU) inside its organisation's group (the organisation's CPU share, shared with its
 * revisions), or, where this gateway cannot make cgroups, RLIMITs through `prlimit`. A step over its bound is killed at
 * once (its group, polled by run-command.ts) and its build fails with one line saying which bound: a fork loop or a
 * memory hog in an install script stops there, never reaching the gateway or the other tenants' builds.
 *
 * What the RLIMIT fallback holds is weaker, and docs/security.md says so: RLIMIT_DATA bounds each process's heap, not
 * the step's sum; RLIMIT_NPROC counts every process of the gateway's user (so it is set to the step's bound above what
 * that user runs now) and is not enforced for root; RLIMIT_CPU is CPU-seconds per process; there is no CPU share.
 */
export interface StepLimits {
  /** BUILD_MEMORY_MB: memory of the whole step (cgroup), or of each of its processes' heap (RLIMIT_DATA). */
  readonly memoryMb: number;
  /** BUILD_MAX_PIDS: processes (and threads) of the step at once. */
  readonly pids: number;
  /** BUILD_CPUS: CPUs the step may use at most. */
  readonly cpus: number;
  /** ORG_CPUS: CPUs of the organisation's group the step runs in. */
  readonly orgCpus: number;
}

export interface StepBound {
  /** `argv` run inside the bound. */
  wrap(argv: readonly string[]): string[];
  /** Why the step went over its bound (one line), or null: polled while it runs, asked once more when it ended. */
  over(): string | null;
  /** Kills every process of the step now (with a cgroup; without one, the process group is all there is). */
  kill(): void;
  /** After the step: kills what is left of it and removes its group. */
  release(): void;
}

export class BuildLimits {
  private made = 0;

  constructor(
    readonly limits: StepLimits,
    /** This gateway's cgroup folder (shared with the revisions: their organisation's group is the same), or null. */
    private readonly cgroups: CgroupParent | null,
  ) {}

  get kind(): 'cgroup' | 'rlimit' {
    return this.cgroups ? 'cgroup' : 'rlimit';
  }

  /** The bound of one step (`name`: git, npm) of `org`'s build. */
  step(org: string | null, name: string): StepBound {
    const { memoryMb, pids, cpus, orgCpus } = this.limits;
    const memoryBytes = memoryMb * 1024 * 1024;
    let group: RevisionCgroup | null = null;
    try {
      // A null organisation (a workspace no organisation owns) shares one group with the others like it.
      const parent = this.cgroups?.org(org ?? '\u0000none', orgCpus);
      group = parent?.create(`build-${name}-${process.pid}-${++this.made}`, { memoryBytes, pids, cpus }) ?? null;
    } catch {
      group = null; // the kernel refused a limit: the RLIMITs below still hold
    }
    if (group) {
      const cg = group;
      return {
        wrap: (argv) => joinArgv(cg.procsFiles, [...argv]),
        over: () =>
          cg.oomKilled()
            ? `out of memory (over its ${mib(memoryBytes)})`
            : cg.pidsExhausted()
              ? `too many processes (over its ${pids})`
              : null,
        kill: () => cg.kill(),
        release: () => cg.remove(),
      };
    }
    const nproc = process.getuid?.() === 0 ? [] : [`--nproc=${pids + tasksOfThisUser()}`];
    return {
      wrap: (argv) => ['prlimit', `--data=${memoryBytes}`, ...nproc, '--', ...argv],
      over: () => null,
      kill: () => {},
      release: () => {},
    };
  }
}

/** Processes and threads of this process's user now (RLIMIT_NPROC counts them all, not only the step's). */
function tasksOfThisUser(): number {
  const uid = process.getuid?.();
  let n = 0;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (statSync(`/proc/${pid}`).uid === uid) n += readdirSync(`/proc/${pid}/task`).length;
      } catch {
        // ended meanwhile
      }
    }
  } catch {
    // no /proc: the bound alone
  }
  return n;
}

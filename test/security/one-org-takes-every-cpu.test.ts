import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CgroupParent } from '../../src/services/revision-host/local/sandbox/cgroup.ts';
import { BuildLimits } from '../../src/services/control-plane/builds/step-bounds.ts';
import { launchArgv } from '../../src/services/revision-host/local/launch.ts';
import type { RevisionSpec } from '../../src/services/revision-host/revision-host.ts';

/**
 * Finding "CPU is bounded per process, not per organisation" (issue 34, attack 9): each revision had a cgroup of one
 * CPU, so twenty deployments of one tenant had twenty CPUs. Now every revision and every build step of an organisation
 * sits in the organisation's group, whose quota (ORG_CPUS) they share. Measuring CPU shares on a two-core host is
 * flaky, so this checks the structure the kernel enforces: the group, its quota, and who joins it. Skipped where this
 * process cannot make cgroups (the RLIMIT fallback has no CPU share: docs/security.md).
 */
const parent = CgroupParent.open(`org-cpu-test-${process.pid}`);
const home = mkdtempSync(join(tmpdir(), 'org-cpu-'));
afterAll(() => {
  parent?.close();
  rmSync(home, { recursive: true, force: true });
});

const spec = (revisionId: string, org: string): RevisionSpec => ({
  deploymentId: `d-${revisionId}`,
  revisionId,
  appDir: home,
  configPath: 'langgraph.json',
  org,
  env: {},
  memoryMb: 128,
  dataPrefix: 'test',
});

const HOST = { mode: 'host', allow: [] } as const;

/** The organisation's group of a process group's `cgroup.procs` (…/<org>/<process>/cgroup.procs). */
const orgOf = (procsFile: string) => dirname(dirname(procsFile));

describe.skipIf(parent === null)("one organisation's processes share its CPUs", () => {
  it('revisions of one organisation join one group with ORG_CPUS as its quota; another organisation has its own', () => {
    const a1 = launchArgv(spec('a1', 'org-a'), {
      sandbox: 'off',
      network: HOST,
      cgroups: parent,
      runDir: home,
      orgCpus: 0.5,
    });
    const a2 = launchArgv(spec('a2', 'org-a'), {
      sandbox: 'off',
      network: HOST,
      cgroups: parent,
      runDir: home,
      orgCpus: 0.5,
    });
    const b1 = launchArgv(spec('b1', 'org-b'), {
      sandbox: 'off',
      network: HOST,
      cgroups: parent,
      runDir: home,
      orgCpus: 0.5,
    });
    try {
      const cpu = (l: typeof a1) => l.cgroup!.procsFiles.find((f) => f.includes('/cpu/'))!;
      expect(orgOf(cpu(a1))).toBe(orgOf(cpu(a2)));
      expect(orgOf(cpu(b1))).not.toBe(orgOf(cpu(a1)));
      expect(basename(orgOf(cpu(a1)))).toMatch(/^org-[0-9a-f]{16}$/); // a digest, never the id as a path
      expect(readFileSync(join(orgOf(cpu(a1)), 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('50000');
      // A process's own quota never above its organisation's (cgroup v1 refuses it: EINVAL).
      expect(readFileSync(join(dirname(cpu(a1)), 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('50000');
    } finally {
      for (const l of [a1, a2, b1]) l.cgroup?.remove();
    }
  });

  it("a build step runs inside its organisation's group, beside its revisions", () => {
    const limits = new BuildLimits({ memoryMb: 256, pids: 64, cpus: 1, orgCpus: 0.5 }, parent);
    const revision = launchArgv(spec('a3', 'org-a'), {
      sandbox: 'off',
      network: HOST,
      cgroups: parent,
      runDir: home,
      orgCpus: 0.5,
    });
    const step = limits.step('org-a', 'npm');
    try {
      const argv = step.wrap(['cat', '/proc/self/cgroup']);
      const seen = execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
      const cpuLine = seen.split('\n').find((l) => /:cpu(,|:)|,cpu(,|:)/.test(l))!;
      const orgFolder = basename(orgOf(revision.cgroup!.procsFiles.find((f) => f.includes('/cpu/'))!));
      expect(cpuLine).toContain(`/${orgFolder}/build-npm-`);
    } finally {
      step.release();
      revision.cgroup?.remove();
    }
  });
});

import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/settings.ts';
import { SettingsError } from '../../src/settings/env.ts';
import { cgroupCpuQuota, usableCpus } from '../../src/workers/cpu-count.ts';
import { restartDelayMs } from '../../src/workers/restart-delay.ts';

/** WORKERS as read at boot, and the wait before a dead worker is replaced. */
describe('WORKERS', () => {
  it('defaults to 1; takes a whole number; auto is one per CPU this process may use', () => {
    expect(loadSettings({}).workers).toBe(1);
    expect(loadSettings({ WORKERS: ' 4 ' }).workers).toBe(4);
    expect(loadSettings({ WORKERS: 'AUTO' })).toMatchObject({ workers: usableCpus(), workersAuto: true });
    expect(loadSettings({ WORKERS: '2' }).workersAuto).toBe(false);
  });

  it("auto stays within a container's CPU quota (cgroup v2 cpu.max, v1 cfs_quota_us)", () => {
    const files = (f: Record<string, string>) => (path: string) => f[path] ?? null;
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': '250000 100000\n' }))).toBe(2.5);
    expect(cgroupCpuQuota(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeNull();
    const v1 = { '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' };
    expect(cgroupCpuQuota(files({ ...v1, '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '50000\n' }))).toBe(0.5);
    expect(cgroupCpuQuota(files({ ...v1, '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n' }))).toBeNull();
    expect(cgroupCpuQuota(files({}))).toBeNull();
    // A fraction of a CPU still gets one worker; a quota above the CPUs there are changes nothing.
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '50000 100000' }))).toBe(1);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '100000000 100000' }))).toBe(availableParallelism());
    expect(usableCpus(files({}))).toBe(availableParallelism());
  });

  it.each(['0', '-1', '2.5', 'many', '1025'])('WORKERS=%s fails at boot naming the variable', (value) => {
    expect(() => loadSettings({ WORKERS: value })).toThrow(SettingsError);
    expect(() => loadSettings({ WORKERS: value })).toThrow(
      `WORKERS: must be a whole number 1-1024 or auto, got "${value}"`,
    );
  });
});

describe('restart backoff', () => {
  it('doubles from 250 ms for each death in a row, up to 30 s', () => {
    expect([0, 1, 2, 3, 4].map(restartDelayMs)).toEqual([250, 500, 1000, 2000, 4000]);
    expect(restartDelayMs(7)).toBe(30_000);
    expect(restartDelayMs(1000)).toBe(30_000);
  });
});

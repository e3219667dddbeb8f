import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * The CPUs this process can use, for WORKERS=auto: os.availableParallelism() (the CPUs it may be scheduled on),
 * lowered to a container's CPU quota where the cgroup sets one (`docker run --cpus`, a Kubernetes CPU limit), which
 * Node's own count does not see on every version: on a 64-core node a pod limited to 2 CPUs gets 2 workers, not 64.
 */
export function usableCpus(read: (path: string) => string | null = readOrNull): number {
  const cpus = availableParallelism();
  const quota = cgroupCpuQuota(read);
  return quota === null ? cpus : Math.max(1, Math.min(cpus, Math.ceil(quota)));
}

/** CPUs the cgroup allows (quota ÷ period), or null without a limit. cgroup v2 `cpu.max`, else v1 `cfs_quota_us`. */
export function cgroupCpuQuota(read: (path: string) => string | null): number | null {
  const v2 = read('/sys/fs/cgroup/cpu.max')?.trim().split(/\s+/);
  if (v2) return ratio(v2[0], v2[1]);
  return ratio(
    read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')?.trim(),
    read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')?.trim(),
  );
}

function ratio(quota: string | undefined, period: string | undefined): number | null {
  const q = Number(quota);
  const p = Number(period);
  return quota === undefined || quota === 'max' || !(q > 0) || !(p > 0) ? null : q / p;
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

import { invalid } from './errors.ts';

/**
 * `resource_spec.memory_mb` against the operator's MAX_MEMORY_MB: a tenant asks for its deployment's memory, the
 * operator bounds it (a 64 GiB cgroup on a 23 GiB host bounds nothing). Checked at create and patch (422 naming the
 * maximum), and again where a revision starts, for records written before the bound (memoryOf).
 */
export const MIN_MEMORY_MB = 64;

export function checkMemoryMb(resourceSpec: Record<string, unknown> | null | undefined, maxMemoryMb: number): void {
  const mb = resourceSpec?.memory_mb;
  if (mb === undefined || mb === null) return;
  if (typeof mb !== 'number' || !Number.isInteger(mb) || mb < MIN_MEMORY_MB || mb > maxMemoryMb) {
    throw invalid({
      loc: ['body', 'source_config', 'resource_spec', 'memory_mb'],
      msg: `must be a whole number of MiB from ${MIN_MEMORY_MB} to ${maxMemoryMb} (MAX_MEMORY_MB, this gateway's maximum)`,
      type: 'value_error',
    });
  }
}

/** The memory a revision of the deployment gets: its `memory_mb` within the bounds, else `fallback`. */
export function memoryOf(
  resourceSpec: Record<string, unknown> | null | undefined,
  fallback: number,
  maxMemoryMb: number,
): number {
  const mb = resourceSpec?.memory_mb;
  if (typeof mb !== 'number' || !Number.isInteger(mb) || mb < MIN_MEMORY_MB) return fallback;
  return Math.min(mb, maxMemoryMb);
}

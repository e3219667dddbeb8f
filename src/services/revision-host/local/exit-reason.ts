/** Why a process ended, for a person: over its memory (the cgroup says), its exit, and the last line that tells. */
export function exitReason(
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

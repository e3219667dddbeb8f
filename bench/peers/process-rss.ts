/**
 * The resident set of a process and of every process below it (tsx's esbuild service, a server's workers), read from
 * /proc: VmRSS of each, found through /proc/<pid>/task/<tid>/children. A process that ends between two reads counts 0.
 */
import { readdirSync, readFileSync } from 'node:fs';

const read = (path: string): string => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

function children(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tasks.flatMap((tid) => read(`/proc/${pid}/task/${tid}/children`).split(/\s+/).filter(Boolean).map(Number));
}

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(read(`/proc/${pid}/status`))?.[1] ?? 0);

/** The process tree under `pid` (itself first). */
export function processTree(pid: number): number[] {
  const seen: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (seen.includes(next)) continue;
    seen.push(next);
    queue.push(...children(next));
  }
  return seen;
}

/** RSS of `pid` and its descendants, MB (rounded). */
export const treeRssMb = (pid: number): number =>
  Math.round(processTree(pid).reduce((sum, p) => sum + rssKb(p), 0) / 1024);

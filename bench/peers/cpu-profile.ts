/**
 * Reads a V8 .cpuprofile (written by `node --cpu-prof`) and lists where the
 * time went: self time per function (name, file:line), highest first, and
 * the same summed per package / source area, so "which layer costs most"
 * is answerable at a glance.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
    readonly columnNumber: number;
  };
  readonly children?: readonly number[];
}

interface Profile {
  readonly startTime: number;
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface SelfTime {
  readonly fn: string;
  readonly where: string;
  readonly ms: number;
  readonly percent: number;
}

export interface ProfileSummary {
  /** Busy time sampled (idle excluded); the percentages are of this. */
  readonly totalMs: number;
  readonly idleMs: number;
  /** True when only samples inside the given windows were counted. */
  readonly windowed: boolean;
  readonly functions: readonly SelfTime[];
  readonly areas: readonly SelfTime[];
}

/**
 * `file:///work/main/node_modules/undici/lib/x.js` → `undici/lib/x.js`; `/work/main/src/edge/a.ts` → `src/edge/a.ts`.
 */
function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) return path.slice(nm + '/node_modules/'.length);
  const src = path.search(/\/(src|bench|bin)\//);
  return src !== -1 ? path.slice(src + 1) : path;
}

/** The package (`undici`, `@hono/node-server`), `node:<internal area>`, or the project folder (`src/edge`). */
function area(url: string): string {
  if (url === '') return '(native / VM)';
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const short = shortUrl(url);
  const parts = short.split('/');
  if (short !== url.replace(/^file:\/\//, '') && !short.startsWith('src/') && !short.startsWith('bench/')) {
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  return parts.slice(0, 2).join('/');
}

/**
 * `windows`: [start, end] pairs on the profile's clock (monotonic µs, the
 * clock of `process.hrtime`); when given and some samples fall inside, only
 * those count, so start-up, warm-ups and idle gaps stay out of the figures.
 */
export function summarise(
  file: string,
  top = 30,
  windows: readonly (readonly [number, number])[] = [],
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const at: number[] = [];
  let t = profile.startTime;
  for (const d of profile.timeDeltas) at.push((t += d));
  const inside = (i: number) => windows.some(([a, b]) => at[i]! >= a && at[i]! <= b);
  const windowed = windows.length > 0 && at.some((_, i) => inside(i));
  const selfUs = new Map<number, number>();
  let idleUs = 0;
  profile.samples.forEach((id, i) => {
    if (windowed && !inside(i)) return;
    const us = profile.timeDeltas[i] ?? 0;
    if (byId.get(id)!.callFrame.functionName === '(idle)') idleUs += us;
    else selfUs.set(id, (selfUs.get(id) ?? 0) + us);
  });
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0) || 1;

  const fns = new Map<string, { fn: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber, columnNumber } = byId.get(id)!.callFrame;
    const fn = functionName || '(anonymous)';
    const where = url ? `${shortUrl(url)}:${lineNumber + 1}:${columnNumber + 1}` : '';
    const key = `${fn}\t${where}`;
    const entry = fns.get(key) ?? { fn, where, us: 0 };
    entry.us += us;
    fns.set(key, entry);
    const a = url ? area(url) : fn.startsWith('(') ? fn : '(native / VM)';
    areas.set(a, (areas.get(a) ?? 0) + us);
  }
  const asRow = (fn: string, where: string, us: number): SelfTime => ({
    fn,
    where,
    ms: Math.round(us / 100) / 10,
    percent: Math.round((us / totalUs) * 1000) / 10,
  });
  return {
    totalMs: Math.round(totalUs / 1000),
    idleMs: Math.round(idleUs / 1000),
    windowed,
    functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => asRow(f.fn, f.where, f.us)),
    areas: [...areas]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([a, us]) => asRow(a, '', us)),
  };
}

/**
 * The main thread's profile in a --cpu-prof-dir: a process that loads tsx
 * also writes one for the loader's worker thread. Names end in
 * `.<pid>.<thread>.<seq>.cpuprofile`, thread 0 being the main one; the
 * largest file is taken when the names do not say.
 */
export function mainThreadProfile(dir: string): string | null {
  if (!existsSync(dir)) return null;
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const main = files.find((f) => /\.0\.\d+\.cpuprofile$/.test(f));
  if (main) return join(dir, main);
  const largest = files.sort((a, b) => statSync(join(dir, b)).size - statSync(join(dir, a)).size)[0];
  return largest ? join(dir, largest) : null;
}

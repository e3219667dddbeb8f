import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { readLines } from './line-reader.ts';

/**
 * A revision's stdout and stderr as the gateway's log lines. The child logger
 * carries `deployment` and `revision`; whatever the app prints cannot replace
 * them: fields of a JSON line with those names (or the gateway's own) are
 * nested under `app`, and a line may claim at most `error` (never `fatal`).
 * A flood is cut to a budget of lines per second: the rest is dropped and
 * counted, and the streams pause, so the app waits on its own writes instead
 * of the gateway spending its CPU on them.
 */
export interface OutputLogOptions {
  readonly log: Logger;
  /** Every line kept (for the exit reason), budget or not. */
  readonly remember: (line: string) => void;
  /** Every line within the budget, as printed (the deployment's own log: control-plane/serving/runtime-logs.ts). */
  readonly keep?: (stream: 'stdout' | 'stderr', line: string) => void;
  /** Lines per second logged, sustained (default 200), and the burst (default 1000). */
  readonly linesPerSecond?: number;
  readonly burst?: number;
  readonly now?: () => number;
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' };
const RESERVED = new Set(['deployment', 'revision', 'component', 'app', 'dropped']);
const MAX_LINE = 8192;
const PAUSE_MS = 200;

export function pipeOutput(streams: Record<'stdout' | 'stderr', Readable>, o: OutputLogOptions): void {
  const rate = o.linesPerSecond ?? 200;
  const burst = o.burst ?? 1000;
  const now = o.now ?? Date.now;
  let tokens = burst;
  let last = now();
  let dropped = 0;
  const take = (): boolean => {
    const t = now();
    tokens = Math.min(burst, tokens + ((t - last) / 1000) * rate);
    last = t;
    if (tokens < 1) return false;
    tokens -= 1;
    if (dropped > 0) {
      o.log.warn({ dropped }, `revision output over ${rate} lines/s: lines dropped`);
      dropped = 0;
    }
    return true;
  };
  for (const name of ['stdout', 'stderr'] as const) {
    const stream = streams[name];
    readLines(stream, MAX_LINE, (line) => {
      if (line.trim() === '') return;
      o.remember(line);
      if (take()) {
        o.keep?.(name, line);
        return logLine(o.log, name, line);
      }
      dropped++;
      if (!stream.isPaused()) {
        stream.pause();
        setTimeout(() => stream.resume(), PAUSE_MS).unref();
      }
    });
  }
}

function logLine(log: Logger, stream: 'stdout' | 'stderr', line: string): void {
  let entry: Record<string, unknown> | null = null;
  if (line.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        entry = parsed as Record<string, unknown>;
    } catch {
      entry = null;
    }
  }
  if (entry === null) {
    log[stream === 'stderr' ? 'warn' : 'info']({ stream }, line);
    return;
  }
  const { level, msg, time: _time, pid: _pid, hostname: _host, ...rest } = entry;
  const fields: Record<string, unknown> = {};
  const nested: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) (RESERVED.has(k) ? nested : fields)[k] = v;
  if (Object.keys(nested).length > 0) fields.app = nested;
  const name = LEVELS[Number(level)] ?? 'info';
  log[name as 'info'].call(log, fields, typeof msg === 'string' ? msg : '');
}

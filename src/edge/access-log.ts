import { writeSync } from 'node:fs';
import type { Logger } from 'pino';
import { destinationOf } from '../log.ts';

/** What one request's log line says. None of it is a credential or an identity. */
export interface AccessEntry {
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  readonly rule: string | undefined;
  /** The guard (its id, from the rule file) that ran out, on a denial by a guard. */
  readonly guard?: string | undefined;
  readonly decision: string;
  readonly fellBack: boolean;
  readonly status: number;
  readonly upstream: string | undefined;
  /** The deployment a request named (its id, checked against the id pattern), by path or by host. */
  readonly deployment?: string | undefined;
  readonly ms: number;
}

/** Lines are held at most this long, or until this many characters are held, then written in one go. */
const HOLD_MS = 50;
const BATCH_CHARS = 65_536;

/**
 * The request log: one pino-format JSON line per request (`"level":30`,
 * `"time"`, the logger's bindings, `"msg":"request"`), written to the
 * destination of the logger (createLogger's, found through log.ts). The line is assembled here rather than by
 * `logger.info(object)`: on the path of every request, pino's generic
 * serialiser (and a redaction pass) is most of what logging costs, and
 * these fields need neither. Strings that come from the client (the path)
 * are JSON-escaped; the rest are ids from the rule file, fixed words, or a
 * request id that passed its pattern.
 *
 * Lines are handed to the destination every 50 ms (or every 64 KiB), not
 * one by one: each hand-over is a write system call on the logger's thread
 * pool, and under load it cost more than assembling the lines. Lines still
 * held when the process exits are written synchronously, after what pino
 * flushes on exit; only a process killed outright (SIGKILL) can lose the
 * last 50 ms.
 */
export function accessLog(log: Logger): (entry: AccessEntry) => void {
  if (!log.isLevelEnabled('info')) return () => {};
  const destination = destinationOf(log);
  // A logger made elsewhere (not by createLogger): pino writes the line itself, at pino's cost.
  if (destination === undefined)
    return ({ fellBack, ...e }) => log.info({ ...e, ...(fellBack && { fellBack }) }, 'request');
  const bindings = JSON.stringify(log.bindings());
  const chindings = bindings === '{}' ? '' : `,${bindings.slice(1, -1)}`;
  let held = '';
  const atExit = () => {
    try {
      if (typeof destination.fd === 'number') writeSync(destination.fd, held);
      else destination.write(held);
    } catch {
      // best effort: a full pipe at exit (EAGAIN) must not turn into a crash report
    }
  };
  const release = () => {
    process.off('exit', atExit);
    if (held === '') return;
    const lines = held;
    held = '';
    destination.write(lines);
  };
  return (e) => {
    let line = `{"level":30,"time":${Date.now()}${chindings},"requestId":"${e.requestId}","method":"${e.method}","path":${JSON.stringify(e.path)}`;
    if (e.rule !== undefined) line += `,"rule":${JSON.stringify(e.rule)}`;
    if (e.guard !== undefined) line += `,"guard":${JSON.stringify(e.guard)}`;
    line += `,"decision":"${e.decision}"`;
    if (e.fellBack) line += ',"fellBack":true';
    line += `,"status":${e.status}`;
    if (e.upstream !== undefined) line += `,"upstream":"${e.upstream}"`;
    if (e.deployment !== undefined) line += `,"deployment":"${e.deployment}"`;
    const first = held === '';
    held += `${line},"ms":${e.ms},"msg":"request"}\n`;
    if (held.length >= BATCH_CHARS) release();
    else if (first) {
      setTimeout(release, HOLD_MS).unref();
      process.once('exit', atExit);
    }
  };
}

import { stripVTControlCharacters } from 'node:util';

/**
 * Each deployment's own output (its Agent Server process's stdout and stderr), kept in this process's memory for
 * `GET /v2/deployments/{id}/logs`: a ring of at most `maxLines` lines and `maxBytes` bytes per deployment, the oldest
 * dropped first. A line is attributed by the pipe it came through (the host knows whose process that is), never by
 * what it says: the text is kept as text (a JSON line claiming another deployment is just this deployment's text),
 * with terminal escapes and control characters removed, so it cannot redraw or split a reader's screen either.
 *
 * Entry ids are cursors: increasing within a process, and starting from the boot time in microseconds so a cursor
 * from before a restart never hides newer lines.
 */
export interface LogEntry {
  readonly id: string;
  readonly time: string;
  readonly revision_id: string;
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
}

export interface LogQuery {
  /** Entries after this cursor (an entry's `id`) or after this time. */
  readonly since?: { readonly cursor: number } | { readonly time: number };
  readonly limit: number;
}

export interface RuntimeLogsOptions {
  readonly maxLines?: number;
  readonly maxBytes?: number;
  readonly now?: () => Date;
}

export const RUNTIME_LOG_LINES = 2000;
export const RUNTIME_LOG_BYTES = 512 * 1024;

export type LogListener = (entry: LogEntry | null) => void;
type Listener = LogListener;

/** A deployment's runtime log, in this process (RuntimeLogs) or in Redis for every gateway (shared-runtime-logs.ts). */
export interface DeploymentLogs {
  add(deploymentId: string, revisionId: string, stream: 'stdout' | 'stderr', line: string): void;
  read(deploymentId: string, q: LogQuery): LogEntry[] | Promise<LogEntry[]>;
  subscribe(deploymentId: string, listener: LogListener): () => void;
  forget(deploymentId: string): void;
}

interface Ring {
  entries: { entry: LogEntry; seq: number; at: number; bytes: number }[];
  bytes: number;
  readonly listeners: Set<Listener>;
}

export class RuntimeLogs implements DeploymentLogs {
  private readonly rings = new Map<string, Ring>();
  private seq: number;
  private readonly maxLines: number;
  private readonly maxBytes: number;
  private readonly now: () => Date;

  constructor(o: RuntimeLogsOptions = {}) {
    this.maxLines = o.maxLines ?? RUNTIME_LOG_LINES;
    this.maxBytes = o.maxBytes ?? RUNTIME_LOG_BYTES;
    this.now = o.now ?? (() => new Date());
    this.seq = Date.now() * 1000;
  }

  /** One line a deployment's process printed. */
  add(deploymentId: string, revisionId: string, stream: 'stdout' | 'stderr', line: string): void {
    const text = cleanLogLine(line);
    if (text === '') return;
    const ring = this.ring(deploymentId);
    const at = this.now();
    const seq = ++this.seq;
    const entry: LogEntry = { id: String(seq), time: at.toISOString(), revision_id: revisionId, stream, text };
    const bytes = Buffer.byteLength(text) + 64;
    ring.entries.push({ entry, seq, at: at.getTime(), bytes });
    ring.bytes += bytes;
    while (ring.entries.length > this.maxLines || (ring.bytes > this.maxBytes && ring.entries.length > 1))
      ring.bytes -= ring.entries.shift()!.bytes;
    for (const listener of ring.listeners) listener(entry);
  }

  /**
   * Oldest first. Without `since`, the last `limit` lines; with it, the first `limit` after it (page on with the
   * answer's last id).
   */
  read(deploymentId: string, q: LogQuery): LogEntry[] {
    const all = this.rings.get(deploymentId)?.entries ?? [];
    const since = q.since;
    if (since === undefined) return all.slice(-q.limit).map((e) => e.entry);
    const after =
      'cursor' in since
        ? (e: Ring['entries'][number]) => e.seq > since.cursor
        : (e: Ring['entries'][number]) => e.at > since.time;
    return all
      .filter(after)
      .slice(0, q.limit)
      .map((e) => e.entry);
  }

  /** Every new line of the deployment, then null when it is deleted; answers the unsubscribe. */
  subscribe(deploymentId: string, listener: Listener): () => void {
    const ring = this.ring(deploymentId);
    ring.listeners.add(listener);
    return () => {
      ring.listeners.delete(listener);
      if (ring.listeners.size === 0 && ring.entries.length === 0 && this.rings.get(deploymentId) === ring)
        this.rings.delete(deploymentId);
    };
  }

  /** A deleted deployment: its lines go, its followers are told. */
  forget(deploymentId: string): void {
    const ring = this.rings.get(deploymentId);
    this.rings.delete(deploymentId);
    for (const listener of ring?.listeners ?? []) listener(null);
  }

  private ring(deploymentId: string): Ring {
    let ring = this.rings.get(deploymentId);
    if (!ring) this.rings.set(deploymentId, (ring = { entries: [], bytes: 0, listeners: new Set() }));
    return ring;
  }
}

/**
 * Terminal escapes (colours, cursor moves, OSC titles), other control characters, line separators and bidirectional
 * overrides (which make a reader's screen show text in another order than it was printed) out; tabs stay.
 */
export function cleanLogLine(line: string): string {
  return stripVTControlCharacters(line).replace(
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    '',
  );
}

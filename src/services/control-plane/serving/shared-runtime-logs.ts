import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  cleanLogLine,
  RUNTIME_LOG_BYTES,
  RUNTIME_LOG_LINES,
  type DeploymentLogs,
  type LogEntry,
  type LogListener,
  type LogQuery,
} from './runtime-logs.ts';

/**
 * Each deployment's own output in a Redis stream, so every gateway on the store answers `GET .../logs` for it, not
 * only the one whose process printed it (runtime-logs.ts keeps it in memory when there is no Redis). Bounded like the
 * memory ring: at most `maxLines` entries and `maxBytes` bytes of text per deployment, the oldest trimmed by the same
 * script that adds (one round trip, nothing over the bound in between). An entry's id is its stream id as one number
 * (`ms * 1000 + seq`), the cursor form the memory ring uses too. Followers poll every `pollMs`; a delete removes the
 * stream and leaves a marker for a minute, so a follower on another gateway ends too.
 */
export interface SharedRuntimeLogsOptions {
  readonly redis: Redis;
  /** Keys are `<prefix>:{<deployment id>}:logs` (and `:bytes`, `:deleted`). */
  readonly prefix: string;
  readonly log: Logger;
  readonly maxLines?: number;
  readonly maxBytes?: number;
  readonly pollMs?: number;
}

const ADD = `
local id = redis.call('XADD', KEYS[1], '*', 'e', ARGV[1])
local total = redis.call('INCRBY', KEYS[2], #ARGV[1])
local n = redis.call('XLEN', KEYS[1])
while n > tonumber(ARGV[2]) or (total > tonumber(ARGV[3]) and n > 1) do
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
  redis.call('XDEL', KEYS[1], first[1])
  total = redis.call('DECRBY', KEYS[2], #first[2][2])
  n = n - 1
end
return id`;

type StreamEntry = [id: string, fields: string[]];

export class SharedRuntimeLogs implements DeploymentLogs {
  private readonly maxLines: number;
  private readonly maxBytes: number;
  private warned = false;

  constructor(private readonly o: SharedRuntimeLogsOptions) {
    this.maxLines = o.maxLines ?? RUNTIME_LOG_LINES;
    this.maxBytes = o.maxBytes ?? RUNTIME_LOG_BYTES;
  }

  add(deploymentId: string, revisionId: string, stream: 'stdout' | 'stderr', line: string): void {
    const text = cleanLogLine(line);
    if (text === '') return;
    const value = JSON.stringify({ time: new Date().toISOString(), revision_id: revisionId, stream, text });
    const k = this.keys(deploymentId);
    this.o.redis
      .eval(ADD, 2, k.stream, k.bytes, value, String(this.maxLines), String(this.maxBytes))
      .catch((err: unknown) => {
        // Said once: a Redis outage would otherwise log a line per line printed.
        if (!this.warned) this.o.log.warn({ err, deploymentId }, 'deployment log lines not kept: Redis refused them');
        this.warned = true;
      });
  }

  async read(deploymentId: string, q: LogQuery): Promise<LogEntry[]> {
    const key = this.keys(deploymentId).stream;
    const since = q.since;
    if (since === undefined) {
      const newest = (await this.o.redis.xrevrange(key, '+', '-', 'COUNT', q.limit)) as StreamEntry[];
      return newest.reverse().map(toEntry);
    }
    const start = 'cursor' in since ? `(${streamId(since.cursor)}` : `${Math.floor(since.time) + 1}-0`;
    return ((await this.o.redis.xrange(key, start, '+', 'COUNT', q.limit)) as StreamEntry[]).map(toEntry);
  }

  subscribe(deploymentId: string, listener: LogListener): () => void {
    // From a second ago: the follower's backlog read may come after this, and the overlap is sent once (ids only grow).
    let last = (Date.now() - 1000) * 1000;
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const poll = async () => {
      try {
        for (;;) {
          const fresh = await this.read(deploymentId, { since: { cursor: last }, limit: 500 });
          for (const e of fresh) if (!stopped) listener(e);
          if (fresh.length > 0) last = Number(fresh.at(-1)!.id);
          if (fresh.length < 500) break;
        }
        if (!stopped && (await this.o.redis.exists(this.keys(deploymentId).deleted)) === 1) {
          stopped = true;
          listener(null);
        }
      } catch (err) {
        this.o.log.debug({ err, deploymentId }, 'deployment log follower: read failed, trying again');
      }
      if (!stopped) timer = setTimeout(() => void poll(), this.o.pollMs ?? 500);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  forget(deploymentId: string): void {
    const k = this.keys(deploymentId);
    this.o.redis
      .multi()
      .del(k.stream, k.bytes)
      .set(k.deleted, '1', 'EX', 60)
      .exec()
      .catch((err: unknown) => this.o.log.warn({ err, deploymentId }, 'deployment log not removed'));
  }

  private keys(deploymentId: string) {
    const base = `${this.o.prefix}:{${deploymentId}}`;
    return { stream: `${base}:logs`, bytes: `${base}:logs:bytes`, deleted: `${base}:logs:deleted` };
  }
}

/** A stream id as one number, the cursor form of the API (at most 999 entries a millisecond are told apart). */
function cursorOf(id: string): string {
  const [ms, seq] = id.split('-');
  return String(Number(ms) * 1000 + Math.min(Number(seq), 999));
}

function streamId(cursor: number): string {
  return `${Math.floor(cursor / 1000)}-${cursor % 1000}`;
}

function toEntry([id, fields]: StreamEntry): LogEntry {
  const e = JSON.parse(fields[1] ?? '{}') as Omit<LogEntry, 'id'>;
  return { id: cursorOf(id), time: e.time, revision_id: e.revision_id, stream: e.stream, text: e.text };
}

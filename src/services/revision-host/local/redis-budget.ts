import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisBudgetView } from './redis-forward.ts';

/**
 * A deployment's Redis byte budget, as the forwarder (redis-forward.ts)
 * enforces it: what its keys hold, measured every `intervalMs` with the
 * platform's client (measureRedisBytes), plus what every growing command
 * forwarded since may have added (its request's bytes and a per-key
 * overhead), so a deployment cannot write past the budget between two
 * measures. Deletes count only at the next measure: the estimate errs high.
 */
export interface RedisBudgetOptions {
  readonly maxBytes: number;
  readonly intervalMs: number;
  /** The bytes its keys use now. */
  readonly measure: () => Promise<number>;
  readonly log: Logger;
}

export class RedisBudget implements RedisBudgetView {
  readonly maxBytes: number;
  private measured = 0;
  private since = 0;
  private timer: NodeJS.Timeout | null = null;
  private measuring: Promise<void> | null = null;
  private warned = false;

  constructor(private readonly o: RedisBudgetOptions) {
    this.maxBytes = o.maxBytes;
  }

  /** Measures once (so a deployment already over starts over), then every interval. */
  async start(): Promise<void> {
    await this.measureNow();
    this.timer = setInterval(() => void this.measureNow(), this.o.intervalMs);
    this.timer.unref();
  }

  over(): boolean {
    return this.used() > this.maxBytes;
  }

  used(): number {
    return this.measured + this.since;
  }

  wrote(bytes: number): void {
    this.since += bytes;
  }

  measureNow(): Promise<void> {
    this.measuring ??= (async () => {
      // Writes during the measure may be counted twice (in it and after it): high, never low.
      const before = this.since;
      try {
        this.measured = await this.o.measure();
        this.since -= before;
        const over = this.over();
        if (over && !this.warned)
          this.o.log.warn(
            { usedBytes: this.used(), maxBytes: this.maxBytes },
            'deployment over its Redis budget: writes refused until it deletes data',
          );
        this.warned = over;
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'could not measure the deployment\u2019s Redis usage');
      } finally {
        this.measuring = null;
      }
    })();
    return this.measuring;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** Keys under `<prefix>:` and the bytes Redis says they use (SCAN, then MEMORY USAGE in batches). */
export async function measureRedisBytes(redis: Redis, prefix: string, batch = 1000): Promise<number> {
  const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`;
  let cursor = '0';
  let total = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', batch);
    cursor = next;
    if (keys.length === 0) continue;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.call('MEMORY', 'USAGE', key);
    for (const [err, bytes] of (await pipeline.exec()) ?? []) if (!err) total += Number(bytes ?? 0);
  } while (cursor !== '0');
  return total;
}

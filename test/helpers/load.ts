import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from 'undici';

/**
 * Closed-loop load for fault tests: `workers` loops, each sending one
 * request at a time over a shared undici Pool until stopped, recording every
 * request (its own x-request-id, start and end on the `performance.now()`
 * clock, status, and the body of anything but a 200). A request that gets no
 * answer within `timeoutMs` is recorded with status 0 and its error, so a
 * hung edge fails the test instead of hanging it.
 */
export interface Sample {
  readonly id: string;
  readonly worker: number;
  readonly path: string;
  readonly start: number;
  readonly end: number;
  readonly ms: number;
  /** 0 = no answer (see `error`). */
  readonly status: number;
  /** Body text of a non-200 answer. */
  readonly body?: string;
  readonly error?: string;
}

export interface LoadRequest {
  readonly path: string;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
}

export interface LoadOptions {
  /** Origin of the edge, e.g. http://127.0.0.1:1234. */
  readonly url: string;
  readonly workers: number;
  /** What worker `w` sends as its `seq`-th request. */
  readonly request: (worker: number, seq: number) => LoadRequest;
  readonly timeoutMs?: number;
  /** Prefix of the x-request-id of each request. */
  readonly tag?: string;
}

export interface Load {
  readonly samples: readonly Sample[];
  /** Stops every worker after its current request; resolves with every sample. */
  stop(): Promise<Sample[]>;
}

export function startLoad({ url, workers, request, timeoutMs = 5000, tag = 'load' }: LoadOptions): Load {
  const pool = new Pool(url, { connections: workers, pipelining: 1 });
  const samples: Sample[] = [];
  let stopped = false;
  const loop = async (worker: number) => {
    for (let seq = 0; !stopped; seq++) {
      const { path, method = 'GET', headers = {} } = request(worker, seq);
      const id = `${tag}-${worker}-${seq}`;
      const start = performance.now();
      let status = 0;
      let body: string | undefined;
      let error: string | undefined;
      try {
        const res = await pool.request({
          path,
          method,
          headers: { ...headers, 'x-request-id': id },
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        status = res.statusCode;
        if (status === 200) await res.body.dump();
        else body = await res.body.text();
      } catch (err) {
        error = String((err as Error)?.message ?? err);
      }
      const end = performance.now();
      samples.push({
        id,
        worker,
        path,
        start,
        end,
        ms: end - start,
        status,
        ...(body === undefined ? {} : { body }),
        ...(error === undefined ? {} : { error }),
      });
    }
  };
  const running = Array.from({ length: workers }, (_, w) => loop(w));
  return {
    samples,
    async stop() {
      stopped = true;
      await Promise.all(running);
      await pool.close();
      return samples;
    },
  };
}

/** The `p`-th percentile (0–100, nearest rank) of `values`; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Count, p50, p99 and max of the samples' latencies, ms. */
export function stats(samples: readonly Sample[]): Stats {
  const ms = samples.map((s) => s.ms);
  return { n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: Math.max(...ms) };
}

/** The event loop's worst delay (how late a timer can fire), ms, from now until `stop()`; 10 ms resolution. */
export function watchLoopDelay(): { stop(): number } {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return {
    stop() {
      h.disable();
      return h.max / 1e6;
    },
  };
}

/** Counts of each status, e.g. `{200: 950, 503: 50}`. */
export function statusCounts(samples: readonly Sample[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const s of samples) counts[s.status] = (counts[s.status] ?? 0) + 1;
  return counts;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

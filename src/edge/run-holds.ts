import type { Logger } from 'pino';
import type { Upstream } from '../proxy/forward.ts';
import type { Lease } from '../limiter/types.ts';

/**
 * `until: run`: an in-flight slot held until the run a response started ends, not when its client leaves.
 *
 * The run is named by the response's `Content-Location` (`/threads/<t>/runs/<r>` or `/runs/<r>`, as the Agent Server
 * answers every run-starting request). The edge then waits for the run where the run lives, through the Agent Server's
 * own API: `GET <location>/join` (a thread's run: answers when the run has finished, failed or been cancelled) or
 * `GET <location>/stream` (a threadless run's join stream: ends when the run does), sent to the same upstream with the
 * client's own credentials, and gives the slots back when that answers. Meanwhile the store lease stays renewed by this
 * edge like any other slot.
 *
 * Why the edge asks, rather than the Agent Server writing to the limiter's store when a run ends: a deployment's Agent
 * Server is tenant code in a sandbox, which must never reach the gateway's store; asking through the public API works
 * for the bundled server, a deployment's, and the official one alike, and a tenant's server that lies about its runs
 * only frees its own tenant's slots early. Crash-safety: an edge that dies stops renewing, so its slots come back
 * within the lease (the run may then still be running: the slot is freed early, never leaked); an Agent Server that
 * is unreachable is asked again with backoff, and after `maxAttempts` failures the slots are given back.
 */
export interface RunHoldsOptions {
  readonly log: Logger;
  /** First wait before asking again after a failure, doubled each time up to 30 s. */
  readonly retryMs?: number;
  readonly maxAttempts?: number;
}

/** The run path of a Content-Location, and where to wait for it; null when it names no run. */
export function runWaitPath(location: string): string | null {
  let path = location;
  if (/^https?:\/\//i.test(path)) {
    try {
      path = new URL(path).pathname;
    } catch {
      return null;
    }
  }
  const q = path.indexOf('?');
  if (q !== -1) path = path.slice(0, q);
  if (/^\/threads\/[^/]+\/runs\/[^/]+$/.test(path)) return `${path}/join`;
  if (/^\/runs\/[^/]+$/.test(path)) return `${path}/stream`;
  return null;
}

/** Request headers a wait needs: the client's credentials and identity, none of its body's. */
/** After a socket closes with no run on its thread yet, how long until the thread is looked at once more. */
const THREAD_SECOND_LOOK_MS = 1000;

const DROPPED = new Set(['content-length', 'content-type', 'transfer-encoding', 'expect', 'accept', 'last-event-id']);

export class RunHolds {
  private readonly waits = new Set<AbortController>();
  private closed = false;
  private readonly retryMs: number;
  private readonly maxAttempts: number;

  constructor(private readonly options: RunHoldsOptions) {
    this.retryMs = options.retryMs ?? 1000;
    this.maxAttempts = options.maxAttempts ?? 8;
  }

  /** Runs this edge is waiting for now. */
  get size(): number {
    return this.waits.size;
  }

  /**
   * Holds `lease` until the run at `location` (on `upstream`, under its base path) ends. False, and nothing held, when
   * the location names no run: the caller releases at once.
   */
  hold(lease: Lease, upstream: Upstream, location: string, requestHeaders: Record<string, string | string[]>): boolean {
    const wait = runWaitPath(location);
    if (wait === null) return false;
    const headers = waitHeaders(requestHeaders, upstream);
    const abort = new AbortController();
    this.waits.add(abort);
    void this.follow(upstream, upstream.basePath + wait, headers, abort.signal).finally(() => {
      this.waits.delete(abort);
      if (!this.closed) void lease.release();
    });
    return true;
  }

  /**
   * Holds `lease` until thread `threadId` (on `upstream`) has no run queued or running: for a work command sent inside a
   * WebSocket, whose answer (the run id) travels in the socket's own stream, which the edge does not read. Called once
   * the socket has closed; a run that is still being created then is looked for again a second later.
   */
  holdThread(
    lease: Lease,
    upstream: Upstream,
    threadId: string,
    requestHeaders: Record<string, string | string[]>,
  ): void {
    const headers = waitHeaders(requestHeaders, upstream);
    const abort = new AbortController();
    this.waits.add(abort);
    void this.followThread(upstream, threadId, headers, abort.signal).finally(() => {
      this.waits.delete(abort);
      if (!this.closed) void lease.release();
    });
  }

  /** Stops waiting (the edge is shutting down): the slots are left to expire with their leases. */
  close(): void {
    this.closed = true;
    for (const a of this.waits) a.abort();
  }

  private async followThread(
    upstream: Upstream,
    threadId: string,
    headers: Record<string, string | string[]>,
    signal: AbortSignal,
  ): Promise<void> {
    const base = `${upstream.basePath}/threads/${encodeURIComponent(threadId)}/runs`;
    let looks = 0;
    for (let attempt = 1; attempt <= this.maxAttempts && !signal.aborted;) {
      let active: string[];
      try {
        const res = await upstream.pool.request({ path: `${base}?limit=100`, method: 'GET', headers, signal });
        const text = await res.body.text();
        if (res.statusCode >= 500) throw new Error(`status ${res.statusCode}`);
        if (res.statusCode >= 400) return; // the thread is gone or no longer visible: nothing left to hold
        active = activeRuns(text);
      } catch (err) {
        if (signal.aborted) return;
        this.options.log.debug({ err, threadId }, 'listing a thread\u2019s runs failed; asking again');
        attempt++;
        await new Promise((r) => setTimeout(r, this.retryMs).unref());
        continue;
      }
      if (active.length === 0) {
        if (++looks >= 2) return;
        await new Promise((r) => setTimeout(r, THREAD_SECOND_LOOK_MS).unref());
        continue;
      }
      for (const run of active) await this.follow(upstream, `${base}/${encodeURIComponent(run)}/join`, headers, signal);
    }
  }

  private async follow(
    upstream: Upstream,
    path: string,
    headers: Record<string, string | string[]>,
    signal: AbortSignal,
  ): Promise<void> {
    let delay = this.retryMs;
    for (let attempt = 1; attempt <= this.maxAttempts && !signal.aborted; attempt++) {
      try {
        const res = await upstream.pool.request({
          path,
          method: 'GET',
          headers,
          signal,
          headersTimeout: 0, // the join answers when the run ends
          bodyTimeout: 0, // a join stream idles between events
        });
        // Read to the end: a join stream ends when the run does.
        for await (const _ of res.body);
        // Finished, failed, cancelled (2xx); unknown or no longer visible (4xx): nothing left to hold.
        if (res.statusCode < 500) return;
      } catch (err) {
        if (signal.aborted) return;
        this.options.log.debug({ err, path }, 'waiting for a run failed; asking again');
      }
      await new Promise((r) => setTimeout(r, delay).unref());
      delay = Math.min(delay * 2, 30_000);
    }
    if (!signal.aborted) this.options.log.warn({ path }, 'gave up waiting for a run: its in-flight slots are released');
  }
}

/** A wait's request headers: the client's credentials and identity, none of its body's, and the upstream's own. */
function waitHeaders(
  requestHeaders: Record<string, string | string[]>,
  upstream: Upstream,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(requestHeaders))
    if (!DROPPED.has(k) && !k.startsWith('sec-websocket-')) headers[k] = v;
  Object.assign(headers, upstream.requestHeaders);
  return headers;
}

/** The ids of the queued or running runs in a thread's run list (anything unreadable: none). */
function activeRuns(text: string): string[] {
  try {
    const runs = JSON.parse(text) as unknown;
    if (!Array.isArray(runs)) return [];
    return runs
      .filter((r): r is { run_id: string; status: string } => typeof (r as { run_id?: unknown })?.run_id === 'string')
      .filter((r) => r.status === 'pending' || r.status === 'running')
      .map((r) => r.run_id);
  } catch {
    return [];
  }
}

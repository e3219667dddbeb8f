import type { Lease } from '../limiter/types.ts';
import type { Upstream } from '../proxy/forward.ts';
import type { Verdict } from './limit.ts';
import type { RunHolds } from './run-holds.ts';

/**
 * When the in-flight slots a request took are given back. `until: response` (the default): when its response has
 * ended, whichever way (finished, failed, the client gone). `until: run`: when the run the response started ends (see
 * run-holds.ts), if the upstream answered 2xx with a `Content-Location` naming a run; otherwise at once, as for a
 * response.
 */
export function settleSlots(
  verdict: Verdict | null,
  answer: {
    readonly status: number;
    readonly contentLocation?: string | undefined;
    readonly upstream: Upstream | null;
    readonly headers: Record<string, string | string[]> | null;
  },
  runs: RunHolds | undefined,
): void {
  const lease = verdict?.lease;
  if (lease === undefined) return;
  const { status, contentLocation, upstream, headers } = answer;
  if (
    verdict!.untilRun &&
    runs !== undefined &&
    status >= 200 &&
    status < 300 &&
    contentLocation !== undefined &&
    upstream !== null &&
    headers !== null &&
    runs.hold(lease, upstream, contentLocation, headers)
  )
    return;
  void lease.release();
}

/**
 * For a connection that outlives its request (a WebSocket piped after an upgrade): the slots its verdict took are
 * given back when the socket closes, whichever side closes it. The upgrade path calls this once the upstream accepted.
 */
export function releaseWhenClosed(verdict: Verdict | null, socket: { once(event: 'close', f: () => void): unknown }) {
  const lease = verdict?.lease;
  if (lease !== undefined) socket.once('close', () => void lease.release());
}

/**
 * A work command sent inside a WebSocket (`run.start`, `input.respond`): its slots are held while the socket is open,
 * and, when one of its in-flight limits is `until: run`, after it closes until its thread has no run queued or running
 * (`holdThread`: run-holds.ts). Given back at close otherwise. A socket that starts a run and closes keeps its slot.
 */
export function holdPastClose(
  verdict: Verdict | null,
  socket: { once(event: 'close', f: () => void): unknown },
  holdThread: ((lease: Lease) => void) | null,
): void {
  const lease = verdict?.lease;
  if (lease === undefined) return;
  socket.once('close', () => {
    if (verdict!.untilRun && holdThread !== null) holdThread(lease);
    else void lease.release();
  });
}

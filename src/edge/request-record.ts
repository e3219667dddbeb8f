import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.ts';
import type { Upstream } from '../proxy/forward.ts';
import { accessLog } from './access-log.ts';
import type { Verdict } from './limit.ts';

/** How one request ended, for its metrics and its access-log line. */
export interface FinishedRequest {
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  readonly verdict: Verdict | null;
  readonly status: number;
  readonly upstream: Upstream | null;
  readonly deployment: string | undefined;
  /** `performance.now()` when the request arrived. */
  readonly started: number;
}

/** Counts a finished request (plain or a WebSocket upgrade) in `gateway_requests_total` and writes its log line. */
export function requestRecorder(log: Logger, metrics: Metrics | undefined): (r: FinishedRequest) => void {
  const logRequest = accessLog(log);
  return function recordRequest({ requestId, method, path, verdict, status, upstream, deployment, started }) {
    const decision = verdict?.decision ?? 'unlimited';
    metrics?.requests.inc({ rule: verdict?.match.rule.id ?? '', category: verdict?.category ?? '', decision, status });
    logRequest({
      requestId,
      method,
      path,
      rule: verdict?.match.rule.id,
      guard: verdict?.guard ?? undefined,
      decision,
      fellBack: verdict?.fellBack ?? false,
      status,
      upstream: upstream?.name,
      deployment,
      ms: Math.round((performance.now() - started) * 10) / 10,
    });
  };
}

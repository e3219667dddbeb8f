import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.ts';
import type { BreakerState } from '../limiter/breaker.ts';
import { registerControlPlaneMetrics } from './control-plane-metrics.ts';

/**
 * Prometheus metrics of the gateway, served on the admin listener. Labels
 * carry rule ids, guard ids, categories, decisions, statuses and upstream names only:
 * never an identity.
 */
export type Metrics = ReturnType<typeof createMetrics>;

const BREAKER_VALUE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

/**
 * `workerSlot`: this process is edge worker n of WORKERS (see src/workers/); the primary aggregates the workers'
 * metrics by each one's `aggregator` (sum unless said otherwise), and `gateway_worker_requests_total{worker}` keeps
 * each worker's share of the requests apart.
 */
export function createMetrics(workerSlot?: number) {
  const registry = new Registry();
  /** The edge's count of deployment routes, read when scraped (set by the gateway once its route table exists). */
  let routeCount = () => 0;
  collectDefaultMetrics({ register: registry, prefix: 'gateway_' });
  const metrics = {
    registry,
    // Counted on every request: plain numbers, formatted when scraped (see hot-metrics.ts).
    requests: new HotCounter(
      registry,
      'gateway_requests_total',
      'Requests by deciding rule, category, decision (allowed, denied, shadow-denied, unlimited) and status',
      ['rule', 'category', 'decision', 'status'],
    ),
    guardDenials: new Counter({
      name: 'gateway_guard_denials_total',
      help: 'Requests denied (429) because a guard of the rule file ran out, by guard id',
      labelNames: ['guard'] as const,
      registers: [registry],
    }),
    upstreamSeconds: new HotHistogram(
      registry,
      'gateway_upstream_duration_seconds',
      'Time to the upstream response headers',
      ['upstream', 'status'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    storeSeconds: new HotHistogram(
      registry,
      'gateway_store_duration_seconds',
      'Time of one bucket-store call',
      ['store', 'result'],
      [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    ),
    storeErrors: new Counter({
      name: 'gateway_store_errors_total',
      help: 'Bucket-store calls that failed or timed out',
      labelNames: ['store'] as const,
      registers: [registry],
    }),
    fallbackDecisions: new Counter({
      name: 'gateway_store_fallback_total',
      help: 'Requests decided by per-process buckets because the store failed (FAIL_MODE=open)',
      registers: [registry],
    }),
    breakerState: new Gauge({
      name: 'gateway_store_breaker_state',
      help: 'Store circuit breaker: 0 closed, 1 half-open, 2 open',
      registers: [registry],
      // Over workers: the worst one.
      aggregator: 'max',
    }),
    rulesInfo: new Gauge({
      name: 'gateway_rules_info',
      help: 'The rule file in force (value 1)',
      labelNames: ['region', 'version'] as const,
      registers: [registry],
      // Over workers: 1 for each version some worker serves (two while a reload reaches them).
      aggregator: 'max',
    }),
    reloads: new Counter({
      name: 'gateway_rules_reloads_total',
      help: 'Rule reloads by result (ok, invalid, unchanged)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    slotsInUse: new Gauge({
      name: 'gateway_inflight_slots',
      help: 'In-flight slots this edge holds now, by policy (<rule>.<by> or guard.<id>): requests (or runs) in flight',
      labelNames: ['policy'] as const,
      registers: [registry],
    }),
    sseStreams: new Gauge({
      name: 'gateway_sse_streams_active',
      help: 'Server-sent event streams open through the edge',
      registers: [registry],
    }),
    webSockets: new Gauge({
      name: 'gateway_websockets_open',
      help: 'WebSockets open through the edge (upgraded, until either side closes)',
      registers: [registry],
    }),
    webSocketsTotal: new Counter({
      name: 'gateway_websockets_total',
      help: 'WebSocket upgrades the edge answered, by result (upgraded, refused: any answer but 101)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    webSocketCommands: new Counter({
      name: 'gateway_websocket_commands_total',
      help: 'Commands inside WebSockets that start work (run.start, input.respond), limited like the HTTP request that starts a run, by deciding rule and decision',
      labelNames: ['rule', 'decision'] as const,
      registers: [registry],
    }),
    deploymentRoutes: new Gauge({
      name: 'gateway_deployment_routes',
      help: 'Deployments this edge routes now (its copy of the route table): every edge on one table should agree; over workers, the fewest any of them routes',
      registers: [registry],
      aggregator: 'min',
      collect() {
        this.set(routeCount());
      },
    }),
    countRoutes(count: () => number) {
      routeCount = count;
    },
    setBreaker(state: BreakerState) {
      metrics.breakerState.set(BREAKER_VALUE[state]);
    },
    setRules(region: string, version: string) {
      metrics.rulesInfo.reset();
      metrics.rulesInfo.set({ region, version }, 1);
    },
  };
  // A worker runs no bundled service (its primary does, and serves their metrics).
  if (workerSlot === undefined) registerControlPlaneMetrics(registry);
  if (workerSlot !== undefined) {
    // Read from the request counter when scraped: nothing more on the request path.
    registry.registerMetric({
      name: 'gateway_worker_requests_total',
      help: 'Requests answered by each edge worker (WORKERS > 1)',
      type: 'counter',
      aggregator: 'sum',
      get: () => ({
        name: 'gateway_worker_requests_total',
        help: 'Requests answered by each edge worker (WORKERS > 1)',
        type: 'counter',
        aggregator: 'sum',
        values: [{ value: metrics.requests.total(), labels: { worker: String(workerSlot) } }],
      }),
    } as unknown as Metric);
  }
  return metrics;
}

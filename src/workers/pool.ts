import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import { registerControlPlaneMetrics } from '../metrics/control-plane-metrics.ts';
import type { MetricsSource, Readiness } from '../admin/app.ts';
import { isWorkerMessage, WORKER_SLOT_VARIABLE, type PrimaryMessage, type WorkerMessage } from './messages.ts';
import { restartDelayMs, RESTART_STABLE_MS } from './restart-delay.ts';

/** How long a scrape waits for each worker's metrics; a worker that does not answer is left out of that scrape. */
const METRICS_TIMEOUT_MS = 2000;

/** One worker's `registry.getMetricsAsJSON()`. */
type WorkerMetrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

interface Slot {
  readonly slot: number;
  worker: Worker | null;
  /** Set once the worker's edge listens. */
  readiness: Readiness | null;
  startedAt: number;
  deathsInARow: number;
  restartTimer: NodeJS.Timeout | undefined;
}

export class WorkerStartError extends Error {
  constructor(
    readonly slot: number,
    readonly exitCode: number,
  ) {
    super(`edge worker ${slot} exited (${exitCode}) before it served`);
  }
}

/**
 * The primary's edge workers (node:cluster): forks one per slot with `env` added to its own environment, replaces
 * a worker that dies unless draining (after restartDelayMs, logged), collects each worker's readiness, and gathers
 * their metrics into one exposition. The workers share the public port through the cluster: the primary holds the
 * listening socket and hands connections to them in turn.
 */
export class WorkerPool {
  private readonly slots: Slot[];
  private draining = false;
  private nextRequest = 0;
  private readonly pending = new Map<number, (metrics: WorkerMetrics | null) => void>();
  /** The primary's own series, served beside the workers' aggregate. */
  readonly registry = new Registry();
  private readonly restarts = new Counter({
    name: 'gateway_worker_restarts_total',
    help: 'Edge workers replaced after they died (WORKERS > 1)',
    registers: [this.registry],
  });
  address: { host: string; port: number } | null = null;

  constructor(
    count: number,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
  ) {
    this.slots = Array.from({ length: count }, (_, i) => ({
      slot: i + 1,
      worker: null,
      readiness: null,
      startedAt: 0,
      deathsInARow: 0,
      restartTimer: undefined,
    }));
    // The primary runs the bundled services: their metrics are its own series.
    registerControlPlaneMetrics(this.registry);
    const slots = this.slots;
    new Gauge({
      name: 'gateway_workers',
      help: 'Edge workers by state: serving, or not (starting, restarting)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const serving = slots.filter((s) => s.readiness !== null && !s.readiness.draining).length;
        this.set({ state: 'serving' }, serving);
        this.set({ state: 'not-serving' }, slots.length - serving);
      },
    });
  }

  /** Forks every worker; resolves once all serve, or rejects (WorkerStartError) when one exits first. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      let waiting = this.slots.length;
      for (const s of this.slots)
        this.fork(s, {
          ready: () => --waiting === 0 && resolve(),
          failed: (code) => reject(new WorkerStartError(s.slot, code)),
        });
    });
  }

  /** Readiness over the workers: the worst store state and every rule version among those serving. */
  readiness(draining: boolean): Readiness {
    // A worker drained on its own (someone sent it SIGTERM) serves no more: it is replaced, the gateway stays ready.
    const serving = this.slots.flatMap((s) => (s.readiness && !s.readiness.draining ? [s.readiness] : []));
    const order = ['ok', 'failing-open', 'down'] as const;
    const store = serving.reduce<Readiness['store']>(
      (worst, r) => (order.indexOf(r.store) > order.indexOf(worst) ? r.store : worst),
      'ok',
    );
    return {
      rules: [...new Set(serving.map((r) => r.rules))].join(' '),
      store,
      draining,
      workers: { expected: this.slots.length, ready: serving.length },
    };
  }

  /**
   * SIGHUP to every serving worker: each reloads the rule file. A worker still starting reads the file as it starts,
   * and SIGHUP's default action would end it before its handler is installed.
   */
  reload(): void {
    for (const s of this.slots) if (s.readiness !== null) s.worker?.process.kill('SIGHUP');
  }

  /**
   * Drains every worker (SIGTERM: each stops accepting, finishes within DRAIN_SECONDS and exits) and resolves once
   * all have exited; workers still running after `killAfterMs` are killed. Nothing is restarted from here on.
   */
  async drain(killAfterMs: number): Promise<void> {
    this.draining = true;
    const exits = this.slots.flatMap((s) => {
      clearTimeout(s.restartTimer);
      const w = s.worker;
      if (!w || w.isDead()) return [];
      return [new Promise<void>((resolve) => (w.once('exit', () => resolve()), w.process.kill('SIGTERM')))];
    });
    const kill = setTimeout(() => this.kill(), killAfterMs);
    await Promise.all(exits);
    clearTimeout(kill);
  }

  /** SIGKILL to every worker still running (a second signal to the primary, or a drain past its time). */
  kill(): void {
    this.draining = true;
    for (const s of this.slots) {
      clearTimeout(s.restartTimer);
      if (s.worker && !s.worker.isDead()) s.worker.process.kill('SIGKILL');
    }
  }

  /** The workers' metrics aggregated (by each series' aggregator, sum by default), and the primary's own. */
  readonly metrics: MetricsSource = {
    contentType: this.registry.contentType,
    metrics: async () => {
      const answers = await Promise.all(this.slots.map((s) => this.requestMetrics(s)));
      const aggregate: Registry = AggregatorRegistry.aggregate(answers.filter((a) => a !== null));
      return Registry.merge([aggregate, this.registry]).metrics();
    },
  };

  private requestMetrics(s: Slot): Promise<WorkerMetrics | null> {
    const w = s.worker;
    if (!w || s.readiness === null || !w.isConnected()) return Promise.resolve(null);
    const id = this.nextRequest++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(null), METRICS_TIMEOUT_MS);
      const finish = (metrics: WorkerMetrics | null) => {
        clearTimeout(timer);
        this.pending.delete(id);
        w.off('exit', gone);
        resolve(metrics);
      };
      const gone = () => finish(null);
      w.once('exit', gone);
      this.pending.set(id, finish);
      // A channel that closed meanwhile: this scrape goes without the worker.
      w.send({ gateway: 'metrics', id } satisfies PrimaryMessage, (err) => err && finish(null));
    });
  }

  private fork(s: Slot, boot?: { ready: () => void; failed: (code: number) => void }): void {
    const worker = cluster.fork({ ...this.env, [WORKER_SLOT_VARIABLE]: String(s.slot) });
    s.worker = worker;
    s.readiness = null;
    s.startedAt = Date.now();
    // An IPC error (a send to a worker that just died) is the exit's business, never the primary's end.
    worker.on('error', (err) => this.log.warn({ worker: s.slot, err: err.message }, 'edge worker IPC error'));
    worker.on('message', (m: unknown) => {
      if (!isWorkerMessage(m)) return;
      this.onMessage(s, m);
      if (m.gateway === 'ready') boot?.ready();
    });
    worker.once('exit', (code, signal) => {
      const served = s.readiness !== null;
      s.worker = null;
      s.readiness = null;
      if (this.draining) return;
      if (boot && !served) return boot.failed(code ?? 1);
      const lived = Date.now() - s.startedAt;
      s.deathsInARow = lived >= RESTART_STABLE_MS ? 0 : s.deathsInARow + 1;
      const restartInMs = restartDelayMs(s.deathsInARow - 1);
      this.log.error(
        { worker: s.slot, pid: worker.process.pid, code, signal, livedMs: lived, restartInMs },
        'edge worker exited unexpectedly: restarting it',
      );
      s.restartTimer = setTimeout(() => {
        if (this.draining) return;
        this.restarts.inc();
        this.fork(s);
      }, restartInMs);
    });
  }

  private onMessage(s: Slot, m: WorkerMessage): void {
    if (m.gateway === 'ready') {
      s.readiness = m.readiness;
      this.address ??= { host: m.host, port: m.port };
      this.log.info({ worker: s.slot, pid: s.worker?.process.pid, port: m.port }, 'edge worker serving');
    } else if (m.gateway === 'readiness') {
      if (s.readiness !== null) s.readiness = m.readiness;
    } else if (m.gateway === 'metrics') {
      this.pending.get(m.id)?.(m.metrics as WorkerMetrics);
    }
  }
}

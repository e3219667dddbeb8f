import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/**
 * A labelled counter and a labelled histogram for the request path, served
 * by a prom-client registry in its own text format. prom-client's own
 * `inc` / `observe` validate the label names and hash the label set on
 * every call (about 3 % of the edge's CPU under load); these find their
 * series with one Map lookup on the label values joined, and build the
 * exposition only when /metrics is scraped.
 */
type Labels<L extends string> = Readonly<Record<L, string | number>>;

interface Series<L extends string> {
  readonly labels: Labels<L>;
  count: number;
  sum: number;
  /** Histograms: observations per bucket (not cumulative), the last one for +Inf. */
  readonly buckets: Float64Array | null;
}

abstract class HotMetric<L extends string> {
  protected readonly series = new Map<string, Series<L>>();

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    private readonly bucketCount: number,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  abstract readonly type: 'counter' | 'histogram';
  protected abstract values(): MetricValueWithName<string>[];

  /** What prom-client's registry reads when it is scraped. */
  get() {
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: 'sum' as const };
  }

  reset(): void {
    this.series.clear();
  }

  protected find(labels: Labels<L>): Series<L> {
    let key = '';
    for (const name of this.labelNames) key += `${labels[name]}\u0000`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = {
        labels: { ...labels },
        count: 0,
        sum: 0,
        buckets: this.bucketCount > 0 ? new Float64Array(this.bucketCount) : null,
      };
      this.series.set(key, s);
    }
    return s;
  }
}

export class HotCounter<L extends string> extends HotMetric<L> {
  readonly type = 'counter';

  constructor(registry: Registry, name: string, help: string, labelNames: readonly L[]) {
    super(registry, name, help, labelNames, 0);
  }

  inc(labels: Labels<L>): void {
    this.find(labels).count++;
  }

  /** The sum over every series. */
  total(): number {
    let sum = 0;
    for (const s of this.series.values()) sum += s.count;
    return sum;
  }

  protected values(): MetricValueWithName<string>[] {
    return [...this.series.values()].map((s) => ({ value: s.count, labels: s.labels }));
  }
}

export class HotHistogram<L extends string> extends HotMetric<L> {
  readonly type = 'histogram';

  constructor(
    registry: Registry,
    name: string,
    help: string,
    labelNames: readonly L[],
    private readonly upperBounds: readonly number[],
  ) {
    super(registry, name, help, labelNames, upperBounds.length + 1);
  }

  observe(labels: Labels<L>, value: number): void {
    const s = this.find(labels);
    s.count++;
    s.sum += value;
    let i = 0;
    while (i < this.upperBounds.length && value > this.upperBounds[i]!) i++;
    s.buckets![i]!++;
  }

  protected values(): MetricValueWithName<string>[] {
    const out: MetricValueWithName<string>[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += s.buckets![i]!;
        out.push({ metricName: `${this.name}_bucket`, labels: { le, ...s.labels }, value: cumulative });
      });
      out.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count });
      out.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      out.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return out;
  }
}

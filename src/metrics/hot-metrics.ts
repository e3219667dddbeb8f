import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/**
 * A labelled counter and a labelled histogram for the request path, served
 * by a prom-client registry in its own text format. prom-client's own
 * `inc` / `observe` validate the label names and hash the label set on
 * every call (about 3 % of the edge's CPU under load); these find their
 * series with one Map lookup per label value (a tree of Maps: no key string
 * is built per call), and build the exposition only when /metrics is scraped.
 */
type Labels<L extends string> = Readonly<Record<L, string | number>>;

interface Series<L extends string> {
  readonly labels: Labels<L>;
  count: number;
  sum: number;
  /** Histograms: observations per bucket (not cumulative), the last one for +Inf. */
  readonly buckets: Float64Array | null;
}

/**
 * Series by their first label's value, then the next label's, ...: the last level holds the series. Values are keyed
 * as the exposition writes them (`200` and `'200'` are one series).
 */
type Level<L extends string> = Map<string, Level<L> | Series<L>>;

abstract class HotMetric<L extends string> {
  protected readonly series: Series<L>[] = [];
  private root: Level<L> = new Map();

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
    this.series.length = 0;
    this.root = new Map();
  }

  protected find(labels: Labels<L>): Series<L> {
    const names = this.labelNames;
    const last = names.length - 1;
    let level = this.root;
    for (let i = 0; i < last; i++) {
      const value = String(labels[names[i]!]);
      let next = level.get(value) as Level<L> | undefined;
      if (next === undefined) level.set(value, (next = new Map()));
      level = next;
    }
    const value = String(labels[names[last]!]);
    let s = level.get(value) as Series<L> | undefined;
    if (s === undefined) {
      s = {
        labels: { ...labels },
        count: 0,
        sum: 0,
        buckets: this.bucketCount > 0 ? new Float64Array(this.bucketCount) : null,
      };
      level.set(value, s);
      this.series.push(s);
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
    for (const s of this.series) sum += s.count;
    return sum;
  }

  protected values(): MetricValueWithName<string>[] {
    return this.series.map((s) => ({ value: s.count, labels: s.labels }));
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
    for (const s of this.series) {
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

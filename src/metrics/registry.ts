/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format 0.0.4. Written here rather than taken from a library to keep the hot path free of
 * allocation: a labelled child is looked up once and then incremented directly.
 */
import { getOrInsert } from '../util/get-or-insert.ts';

type Labels = Record<string, string>;

function labelText(names: readonly string[], values: readonly string[]): string {
  if (names.length === 0) return '';
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i] ?? '')}"`);
  return `{${parts.join(',')}}`;
}

function escapeLabel(v: string): string {
  return v.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

interface Metric {
  readonly name: string;
  render(): string;
}

export class CounterChild {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class Counter implements Metric {
  readonly name: string;
  private readonly help: string;
  private readonly labelNames: readonly string[];
  private readonly children = new Map<string, { values: string[]; child: CounterChild }>();

  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  labels(...values: string[]): CounterChild {
    const key = values.join('\u0000');
    const entry = getOrInsert(this.children, key, () => ({ values, child: new CounterChild() }));
    return entry.child;
  }

  inc(by = 1): void {
    this.labels().inc(by);
  }

  get(labels: Labels = {}): number {
    const values = this.labelNames.map((n) => labels[n] ?? '');
    return this.children.get(values.join('\u0000'))?.child.value ?? 0;
  }

  /** Every labelled series and its value. */
  series(): [string[], number][] {
    return [...this.children.values()].map(({ values, child }) => [values, child.value]);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { values, child } of this.children.values()) {
      lines.push(`${this.name}${labelText(this.labelNames, values)} ${formatValue(child.value)}`);
    }
    return lines.join('\n');
  }
}

export class Gauge implements Metric {
  readonly name: string;
  private readonly help: string;
  private readonly labelNames: readonly string[];
  private readonly values = new Map<string, { labels: string[]; value: number }>();
  /** Computed at scrape time when set. */
  collect?: () => void;

  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  set(value: number, ...labels: string[]): void {
    this.values.set(labels.join('\u0000'), { labels, value });
  }

  get(...labels: string[]): number | undefined {
    return this.values.get(labels.join('\u0000'))?.value;
  }

  reset(): void {
    this.values.clear();
  }

  render(): string {
    this.collect?.();
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    for (const { labels, value } of this.values.values()) {
      lines.push(`${this.name}${labelText(this.labelNames, labels)} ${formatValue(value)}`);
    }
    return lines.join('\n');
  }
}

export class HistogramChild {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  private readonly bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

export class Histogram implements Metric {
  readonly name: string;
  private readonly help: string;
  private readonly labelNames: readonly string[];
  private readonly bounds: readonly number[];
  private readonly children = new Map<string, { values: string[]; child: HistogramChild }>();

  constructor(name: string, help: string, bounds: readonly number[], labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.bounds = bounds;
    this.labelNames = labelNames;
  }

  labels(...values: string[]): HistogramChild {
    const key = values.join('\u0000');
    const entry = getOrInsert(this.children, key, () => ({ values, child: new HistogramChild(this.bounds) }));
    return entry.child;
  }

  observe(v: number): void {
    this.labels().observe(v);
  }

  /** Every labelled series: bucket counts (not cumulative), sum and count. */
  series(): [string[], number[], number, number][] {
    return [...this.children.values()].map(({ values, child }) => [
      values,
      [...child.counts],
      child.sum,
      child.count,
    ]);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const { values, child } of this.children.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += child.counts[i]!;
        const labels = labelText([...this.labelNames, 'le'], [...values, formatValue(this.bounds[i]!)]);
        lines.push(`${this.name}_bucket${labels} ${cumulative}`);
      }
      lines.push(
        `${this.name}_bucket${labelText([...this.labelNames, 'le'], [...values, '+Inf'])} ${child.count}`,
      );
      lines.push(`${this.name}_sum${labelText(this.labelNames, values)} ${formatValue(child.sum)}`);
      lines.push(`${this.name}_count${labelText(this.labelNames, values)} ${child.count}`);
    }
    return lines.join('\n');
  }
}

/** Counter and histogram values of a registry, as plain data that can cross a process boundary. */
export interface RegistrySnapshot {
  counters: Record<string, [string[], number][]>;
  histograms: Record<string, [string[], number[], number, number][]>;
}

export class Registry {
  private readonly metrics = new Map<string, Metric>();
  /** The last snapshot absorbed from each source, to turn cumulative values into increments. */
  private readonly absorbed = new Map<string, Map<string, number[]>>();

  register<M extends Metric>(metric: M): M {
    if (this.metrics.has(metric.name)) throw new Error(`metric ${metric.name} registered twice`);
    this.metrics.set(metric.name, metric);
    return metric;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.register(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.register(new Gauge(name, help, labelNames));
  }

  histogram(
    name: string,
    help: string,
    bounds: readonly number[],
    labelNames: readonly string[] = [],
  ): Histogram {
    return this.register(new Histogram(name, help, bounds, labelNames));
  }

  render(): string {
    return `${[...this.metrics.values()].map((m) => m.render()).join('\n')}\n`;
  }

  snapshot(): RegistrySnapshot {
    const out: RegistrySnapshot = { counters: {}, histograms: {} };
    for (const metric of this.metrics.values()) {
      if (metric instanceof Counter) out.counters[metric.name] = metric.series();
      else if (metric instanceof Histogram) out.histograms[metric.name] = metric.series();
    }
    return out;
  }

  /**
   * Adds what another process counted since its previous snapshot to the metrics of the same name
   * here, so that one scrape shows the whole server. A value below the previous one means the
   * source restarted: it is then taken whole.
   */
  absorb(source: string, snapshot: RegistrySnapshot): void {
    const last = getOrInsert(this.absorbed, source, () => new Map());
    const increment = (id: string, now: number[]): number[] => {
      const before = last.get(id);
      last.set(id, now);
      if (!before || now.some((v, i) => v < (before[i] ?? 0))) return now;
      return now.map((v, i) => v - (before[i] ?? 0));
    };
    for (const [name, series] of Object.entries(snapshot.counters)) {
      const metric = this.metrics.get(name);
      if (!(metric instanceof Counter)) continue;
      for (const [labels, value] of series) {
        const [delta] = increment(`c\u0000${name}\u0000${labels.join('\u0000')}`, [value]);
        if (delta) metric.labels(...labels).inc(delta);
      }
    }
    for (const [name, series] of Object.entries(snapshot.histograms)) {
      const metric = this.metrics.get(name);
      if (!(metric instanceof Histogram)) continue;
      for (const [labels, counts, sum, count] of series) {
        const delta = increment(`h\u0000${name}\u0000${labels.join('\u0000')}`, [...counts, sum, count]);
        const child = metric.labels(...labels);
        for (let i = 0; i < counts.length; i++) child.counts[i]! += delta[i]!;
        child.sum += delta[counts.length]!;
        child.count += delta[counts.length + 1]!;
      }
    }
  }
}

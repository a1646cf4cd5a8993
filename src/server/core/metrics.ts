/**
 * The server's metrics, rendered in the Prometheus text exposition format
 * (version 0.0.4): counters, gauges read at scrape time, and histograms.
 */

type Labels = Record<string, string>;

const LATENCY_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  const escapeValue = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return `{${entries.map(([name, value]) => `${name}="${escapeValue(value)}"`).join(',')}}`;
}

class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(labels: Labels = {}, amount = 1): void {
    const key = labelText(labels);
    const entry = this.values.get(key) ?? { labels, value: 0 };
    entry.value += amount;
    this.values.set(key, entry);
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${labelText(labels)} ${value}`);
    return lines;
  }
}

class Histogram {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets = LATENCY_BUCKETS_SECONDS,
  ) {}

  observe(seconds: number, labels: Labels = {}): void {
    const key = labelText(labels);
    let entry = this.series.get(key);
    if (!entry) {
      entry = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, entry);
    }
    for (let index = 0; index < this.buckets.length; index++) {
      if (seconds <= (this.buckets[index] as number)) entry.counts[index] = (entry.counts[index] ?? 0) + 1;
    }
    entry.sum += seconds;
    entry.count += 1;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const { labels, counts, sum, count } of this.series.values()) {
      this.buckets.forEach((bound, index) => {
        lines.push(`${this.name}_bucket${labelText({ ...labels, le: String(bound) })} ${counts[index]}`);
      });
      lines.push(`${this.name}_bucket${labelText({ ...labels, le: '+Inf' })} ${count}`);
      lines.push(`${this.name}_sum${labelText(labels)} ${sum}`);
      lines.push(`${this.name}_count${labelText(labels)} ${count}`);
    }
    return lines;
  }
}

interface Gauge {
  name: string;
  help: string;
  read: () => { labels: Labels; value: number }[];
}

export class Metrics {
  readonly httpRequests = new Counter('sandcell_http_requests_total', 'HTTP requests answered, by method and status.');
  readonly httpDuration = new Histogram(
    'sandcell_http_request_duration_seconds',
    'Time to answer an HTTP request (to the first byte for streams).',
  );
  readonly executions = new Counter(
    'sandcell_executions_total',
    'Executions finished, by status (ok, error, timeout).',
  );
  readonly executionDuration = new Histogram(
    'sandcell_execution_duration_seconds',
    'Wall-clock time of executions inside the sandbox.',
  );
  readonly commands = new Counter(
    'sandcell_commands_total',
    'Shell commands ended, by kind (foreground, background) and status (ok: exit 0, error, timeout).',
  );
  readonly commandDuration = new Histogram(
    'sandcell_command_duration_seconds',
    'Wall-clock time of shell commands inside the sandbox, by kind (foreground, background).',
  );
  readonly sessionsCreated = new Counter('sandcell_sessions_created_total', 'Sessions handed to clients, by API.');
  readonly sessionsClosed = new Counter('sandcell_sessions_closed_total', 'Sessions closed, by reason.');
  readonly sandboxFailures = new Counter(
    'sandcell_sandbox_failures_total',
    'Sandboxes that failed to start or died (kernel crash, out of memory, killed after a timeout).',
  );
  readonly rejected = new Counter('sandcell_requests_rejected_total', 'Requests refused by a limit, by reason.');
  private readonly gauges: Gauge[] = [];

  gauge(name: string, help: string, read: Gauge['read']): void {
    this.gauges.push({ name, help, read });
  }

  render(): string {
    const lines: string[] = [];
    for (const gauge of this.gauges) {
      lines.push(`# HELP ${gauge.name} ${gauge.help}`, `# TYPE ${gauge.name} gauge`);
      for (const { labels, value } of gauge.read()) lines.push(`${gauge.name}${labelText(labels)} ${value}`);
    }
    for (const metric of [
      this.executions,
      this.executionDuration,
      this.commands,
      this.commandDuration,
      this.sessionsCreated,
      this.sessionsClosed,
      this.sandboxFailures,
      this.rejected,
      this.httpRequests,
      this.httpDuration,
    ]) {
      lines.push(...metric.render());
    }
    return `${lines.join('\n')}\n`;
  }
}

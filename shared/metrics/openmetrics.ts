/**
 * berth's numbers in the OpenMetrics text format (https://prometheus.io/docs/specs/om/open_metrics_spec/),
 * for Prometheus and Amazon Managed Prometheus scrapes of `GET /metrics`: what `berth status`
 * reads (every range's size and use, host port use spread, ENI pools), the settle step's backlog,
 * and, where the process runs them, the passes' outcomes and ages. Pure: a reading in, text out.
 */
import type { StatusReport } from '../status/report.js';

/** The settle step's backlog: values given back and still held until their change is seen committed. */
export interface SettleBacklog {
  readonly releasing: number;
  /** Epoch ms the oldest of them was given back; absent with none. */
  readonly oldestSince?: number;
}

/** What one pass did in this process, by outcome. */
export interface PassRecord {
  readonly pass: string;
  readonly succeeded: number;
  readonly failed: number;
  /** Epoch ms the last run ended, and whether it succeeded. */
  readonly lastEndedAt?: number;
  readonly lastSucceeded?: boolean;
}

/** One cluster's reading. */
export interface MetricsReading {
  readonly status: StatusReport;
  readonly settle: SettleBacklog;
  readonly passes?: readonly PassRecord[];
}

/** The content type of the answer (OpenMetrics 1.0.0). */
export const OPENMETRICS_CONTENT_TYPE =
  'application/openmetrics-text; version=1.0.0; charset=utf-8';

type Labels = Readonly<Record<string, string>>;
interface Sample {
  readonly labels: Labels;
  readonly value: number;
  /** A suffix of the family's name (`_total` for counters). */
  readonly suffix?: string;
}
interface Family {
  readonly name: string;
  readonly type: 'gauge' | 'counter';
  readonly unit?: string;
  readonly help: string;
  readonly samples: readonly Sample[];
}

/** A label value escaped as the format asks: backslash, double quote, line feed. */
const escaped = (value: string): string =>
  value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');

function sampleLine(family: Family, sample: Sample): string {
  const labels = Object.entries(sample.labels)
    .map(([key, value]) => `${key}="${escaped(value)}"`)
    .join(',');
  return `${family.name}${sample.suffix ?? ''}{${labels}} ${sample.value}`;
}

function familyText(family: Family): string[] {
  return [
    `# TYPE ${family.name} ${family.type}`,
    ...(family.unit ? [`# UNIT ${family.name} ${family.unit}`] : []),
    `# HELP ${family.name} ${family.help}`,
    ...family.samples.map((sample) => sampleLine(family, sample)),
  ];
}

const seconds = (ms: number) => Math.round(ms) / 1000;

/** Every family, from every cluster's reading. */
function families(readings: readonly MetricsReading[], now: number): Family[] {
  const ranges = readings.flatMap(({ status }) =>
    status.ranges.map((range) => ({
      labels: { cluster: status.cluster, kind: range.kind, range: range.name },
      range,
    })),
  );
  const hostPorts = readings.flatMap(({ status }) =>
    status.ranges.flatMap((range) =>
      'minUse' in range ? [{ labels: { cluster: status.cluster, range: range.name }, range }] : [],
    ),
  );
  const pools = readings.flatMap(({ status }) =>
    status.pools.map((pool) => ({ labels: { cluster: status.cluster, node: pool.node }, pool })),
  );
  const poolFamily = (
    field: 'enis' | 'capacity' | 'assigned' | 'idle' | 'ready' | 'cooling',
    help: string,
  ): Family => ({
    name: `berth_eni_pool_${field}`,
    type: 'gauge',
    help,
    samples: pools.map(({ labels, pool }) => ({ labels, value: pool[field] })),
  });
  const passes = readings.flatMap(({ status, passes }) =>
    (passes ?? []).map((record) => ({
      labels: { cluster: status.cluster, pass: record.pass },
      record,
    })),
  );
  return [
    {
      name: 'berth_range_size',
      type: 'gauge',
      help: 'Values a range holds (cluster IPs, node ports, host ports).',
      samples: ranges.map(({ labels, range }) => ({ labels, value: range.size })),
    },
    {
      name: 'berth_range_used',
      type: 'gauge',
      help: 'Values held, releasing ones included; for a host port range, (pod, port) allocations.',
      samples: ranges.map(({ labels, range }) => ({ labels, value: range.used })),
    },
    {
      name: 'berth_host_port_use_min',
      type: 'gauge',
      help: 'The lowest use count of any port of a host port range.',
      samples: hostPorts.map(({ labels, range }) => ({ labels, value: range.minUse })),
    },
    {
      name: 'berth_host_port_use_max',
      type: 'gauge',
      help: 'The highest use count of any port of a host port range: a port used on every game-server node cannot be scheduled again.',
      samples: hostPorts.map(({ labels, range }) => ({ labels, value: range.maxUse })),
    },
    {
      name: 'berth_host_port_largest_free_block',
      type: 'gauge',
      help: 'The longest run of consecutive ports at the lowest use count: the largest block (count) the range gives keeping every count within one of the others.',
      samples: hostPorts.map(({ labels, range }) => ({ labels, value: range.largestFreeBlock })),
    },
    {
      name: 'berth_host_port_held_outside',
      type: 'gauge',
      help: 'Ports of a host port range held by pods berth never admitted (DaemonSets, hostNetwork pods): never handed out.',
      samples: hostPorts.map(({ labels, range }) => ({ labels, value: range.heldOutside ?? 0 })),
    },
    poolFamily('enis', 'ENIs berth manages on the node.'),
    poolFamily('capacity', 'Addresses the node may hold.'),
    poolFamily('assigned', 'Addresses assigned to the node by EC2.'),
    poolFamily('idle', 'Assigned addresses no pod holds.'),
    poolFamily('ready', 'Idle addresses a pod may take now.'),
    poolFamily('cooling', 'Released addresses resting before reuse.'),
    {
      name: 'berth_settle_releasing',
      type: 'gauge',
      help: 'Values given back and still held until the settle step sees the change committed.',
      samples: readings.map(({ status, settle }) => ({
        labels: { cluster: status.cluster },
        value: settle.releasing,
      })),
    },
    {
      name: 'berth_settle_oldest_releasing_age',
      type: 'gauge',
      unit: 'seconds',
      help: 'How long the oldest releasing value has waited (0 with none); past two minutes the repair pass finishes it.',
      samples: readings.map(({ status, settle }) => ({
        labels: { cluster: status.cluster },
        value: settle.oldestSince === undefined ? 0 : seconds(now - settle.oldestSince),
      })),
    },
    {
      name: 'berth_pass_runs',
      type: 'counter',
      help: 'Passes this process ran, by outcome.',
      samples: passes.flatMap(({ labels, record }) => [
        { labels: { ...labels, outcome: 'succeeded' }, value: record.succeeded, suffix: '_total' },
        { labels: { ...labels, outcome: 'failed' }, value: record.failed, suffix: '_total' },
      ]),
    },
    {
      name: 'berth_pass_last_run_age',
      type: 'gauge',
      unit: 'seconds',
      help: 'How long ago the last run of a pass ended in this process.',
      samples: passes.flatMap(({ labels, record }) =>
        record.lastEndedAt === undefined
          ? []
          : [{ labels, value: seconds(now - record.lastEndedAt) }],
      ),
    },
    {
      name: 'berth_pass_last_run_succeeded',
      type: 'gauge',
      help: '1 when the last run of a pass succeeded, 0 when it failed.',
      samples: passes.flatMap(({ labels, record }) =>
        record.lastSucceeded === undefined ? [] : [{ labels, value: record.lastSucceeded ? 1 : 0 }],
      ),
    },
  ];
}

/** The OpenMetrics text of every cluster's reading at `now`, ending in `# EOF`. */
export function openMetricsText(readings: readonly MetricsReading[], now: number): string {
  const lines = families(readings, now)
    .filter((family) => family.samples.length > 0)
    .flatMap(familyText);
  return `${[...lines, '# EOF'].join('\n')}\n`;
}

/** Counts each pass's outcomes as a process runs them (the local server's timers). */
export class PassRecorder {
  readonly #records = new Map<string, PassRecord>();
  readonly #now: () => number;
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Records one run's end. */
  ended(pass: string, succeeded: boolean): void {
    const before = this.#records.get(pass) ?? { pass, succeeded: 0, failed: 0 };
    this.#records.set(pass, {
      pass,
      succeeded: before.succeeded + (succeeded ? 1 : 0),
      failed: before.failed + (succeeded ? 0 : 1),
      lastEndedAt: this.#now(),
      lastSucceeded: succeeded,
    });
  }

  /** Every pass recorded so far. */
  records(): readonly PassRecord[] {
    return [...this.#records.values()];
  }
}

/**
 * berth's numbers in the OpenMetrics text format (https://prometheus.io/docs/specs/om/open_metrics_spec/)
 * or the Prometheus text format, for Prometheus and Amazon Managed Prometheus scrapes of
 * `GET /metrics`: what `berth status` reads (every range's size and use, host port use spread,
 * ENI pools), the settle step's backlog, and, where the process runs them, the passes' outcomes
 * and ages. Every family passes `metricFamily`'s naming rules. Pure: a reading in, text out.
 */
import type { ClusterCapacity } from '../capacity/view.js';
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
  /** The cluster's capacity view, where the process reads one. */
  readonly capacity?: ClusterCapacity;
}

/**
 * The two text formats a scraper may ask for: OpenMetrics 1.0.0, which Prometheus asks for first
 * (and parses by the answer's Content-Type), and the Prometheus text format 0.0.4 that every
 * other client reads (https://prometheus.io/docs/instrumenting/exposition_formats/).
 */
export type ExpositionFormat = 'openmetrics' | 'text';

/** The Content-Type of each format's answer. */
export const EXPOSITION_CONTENT_TYPES: Readonly<Record<ExpositionFormat, string>> = {
  openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
  text: 'text/plain; version=0.0.4; charset=utf-8',
};

/**
 * The format an `Accept` header asks for: OpenMetrics when its best-weighted acceptable range
 * that berth writes is `application/openmetrics-text` (version 1.0.0, 0.0.1 or none), else the
 * text format, also with no header, as client_golang negotiates (prometheus/common
 * `expfmt/encode.go`, NegotiateIncludingOpenMetrics). A range weighted `q=0` is refused.
 */
export function expositionFormat(accept: string | undefined): ExpositionFormat {
  const ranges = (accept ?? '')
    .split(',')
    .map((range, order) => {
      const [media = '', ...parameters] = range.split(';').map((part) => part.trim());
      const parameter = (key: string) =>
        parameters
          .map((one) => one.split('=').map((side) => side.trim()))
          .find(([name]) => name?.toLowerCase() === key)?.[1];
      const q = Number(parameter('q') ?? 1);
      return { media: media.toLowerCase(), version: parameter('version'), q, order };
    })
    .filter((range) => range.q > 0)
    .sort((a, b) => b.q - a.q || a.order - b.order);
  for (const { media, version } of ranges) {
    if (media === 'application/openmetrics-text' && [undefined, '1.0.0', '0.0.1'].includes(version))
      return 'openmetrics';
    if (media === 'text/plain' && [undefined, '0.0.4'].includes(version)) return 'text';
  }
  return 'text';
}

type Labels = Readonly<Record<string, string>>;
interface Sample {
  readonly labels: Labels;
  readonly value: number;
}

/** A family as berth declares it; `metricFamily` checks it before anything is written. */
export interface FamilySpec {
  /** The family's name; a counter's samples add `_total`. */
  readonly name: string;
  readonly type: 'gauge' | 'counter';
  /** A base unit (https://prometheus.io/docs/practices/naming/#base-units), the name's suffix. */
  readonly unit?: 'seconds';
  readonly help: string;
  readonly samples: readonly Sample[];
}

/** A family whose name, unit and type agree with OpenMetrics 1.0 and Prometheus' naming. */
export type Family = FamilySpec & { readonly checked: true };

/** berth's names: snake_case, no colons (reserved for recording rules). */
const FAMILY_NAME = /^berth_[a-z0-9_]*[a-z0-9]$/;
/** The suffixes OpenMetrics gives sample names, which a family's own name must not end in. */
const SAMPLE_SUFFIXES = ['_total', '_created', '_count', '_sum', '_bucket', '_info'];

/**
 * The family, checked against OpenMetrics 1.0 (https://prometheus.io/docs/specs/om/open_metrics_spec/):
 * a unit is the name's suffix after an underscore (Prometheus' OpenMetrics parser fails the whole
 * scrape on a `# UNIT` that is not: "unit not a suffix of metric"), and no family name ends in a
 * suffix its samples may carry (a counter's samples end in `_total`, which its name does not).
 * Throws on a family that breaks them: a programming error, caught by the unit tests.
 */
export function metricFamily(spec: FamilySpec): Family {
  const problem = !FAMILY_NAME.test(spec.name)
    ? 'is not a snake_case name beginning berth_'
    : spec.unit !== undefined && !spec.name.endsWith(`_${spec.unit}`)
      ? `has the unit ${spec.unit}, so its name must end in _${spec.unit}`
      : SAMPLE_SUFFIXES.find((suffix) => spec.name.endsWith(suffix))
        ? `ends in a suffix of sample names (${SAMPLE_SUFFIXES.join(', ')})`
        : spec.help.trim() === ''
          ? 'has no help'
          : undefined;
  if (problem) throw new Error(`metric family ${spec.name} ${problem}`);
  return { ...spec, checked: true };
}

/** A label value escaped as both formats ask: backslash, double quote, line feed. */
const escaped = (value: string): string =>
  value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');

/** A value as both formats write it: `+Inf`/`-Inf`, `NaN`, or the number. */
function valueText(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/** The name a family's samples carry. */
const sampleName = (family: Family) =>
  family.type === 'counter' ? `${family.name}_total` : family.name;

function sampleLine(family: Family, sample: Sample): string {
  const labels = Object.entries(sample.labels)
    .map(([key, value]) => `${key}="${escaped(value)}"`)
    .join(',');
  return `${sampleName(family)}{${labels}} ${valueText(sample.value)}`;
}

/**
 * One family's lines. OpenMetrics: TYPE, UNIT and HELP under the family's name, the help escaped
 * as a label value is. The text format: HELP and TYPE under the samples' name (a counter's ends
 * in `_total`), the help with only backslash and line feed escaped, and no UNIT.
 */
function familyText(format: ExpositionFormat, family: Family): string[] {
  const samples = family.samples.map((sample) => sampleLine(family, sample));
  if (format === 'text') {
    const help = family.help.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
    const name = sampleName(family);
    return [`# HELP ${name} ${help}`, `# TYPE ${name} ${family.type}`, ...samples];
  }
  return [
    `# TYPE ${family.name} ${family.type}`,
    ...(family.unit ? [`# UNIT ${family.name} ${family.unit}`] : []),
    `# HELP ${family.name} ${escaped(family.help)}`,
    ...samples,
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
  ): FamilySpec => ({
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
  const specs: FamilySpec[] = [
    ...capacityFamilies(readings),
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
      name: 'berth_settle_oldest_releasing_age_seconds',
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
        { labels: { ...labels, outcome: 'succeeded' }, value: record.succeeded },
        { labels: { ...labels, outcome: 'failed' }, value: record.failed },
      ]),
    },
    {
      name: 'berth_pass_last_run_age_seconds',
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
  return specs.map(metricFamily);
}

/** The capacity view's figures, by cluster: the same numbers `GET /v1/capacity` answers. */
function capacityFamilies(readings: readonly MetricsReading[]): FamilySpec[] {
  const views = readings.flatMap(({ capacity }) => (capacity ? [capacity] : []));
  const gauge = (
    name: string,
    help: string,
    samples: (view: ClusterCapacity) => FamilySpec['samples'],
    unit?: 'seconds',
  ): FamilySpec => ({
    name: `berth_capacity_${name}`,
    type: 'gauge',
    help,
    ...(unit ? { unit } : {}),
    samples: views.flatMap(samples),
  });
  const one = (view: ClusterCapacity, value: number | undefined, labels = {}) =>
    value === undefined ? [] : [{ labels: { cluster: view.cluster, ...labels }, value }];
  return [
    gauge('ready_game_servers', 'Ready game servers (holding no players), by fleet.', (view) =>
      Object.entries(view.gameServers?.readyByFleet ?? {}).flatMap(([fleet, n]) =>
        one(view, n, { fleet }),
      ),
    ),
    gauge('free_slots', 'Free game-server slots on Ready, schedulable nodes.', (view) =>
      one(view, view.gameServers?.freeSlots),
    ),
    gauge('buffer_slots', 'The free slots the scale pass keeps.', (view) =>
      one(view, view.buffer?.buffer),
    ),
    gauge('coming_slots', 'Slots of nodes booting or asked for.', (view) =>
      one(view, view.buffer?.slotsComing),
    ),
    gauge(
      'free_host_ports',
      'Free (node, port) pairs of a host port range on the Ready game-server nodes.',
      (view) =>
        (view.hostPorts?.ranges ?? []).flatMap((range) =>
          one(view, range.free, { range: range.range }),
        ),
    ),
    gauge(
      'largest_free_host_port_block',
      'The largest block of consecutive ports a host port range gives.',
      (view) =>
        (view.hostPorts?.ranges ?? []).flatMap((range) =>
          one(view, range.largestFreeBlock, { range: range.range }),
        ),
    ),
    gauge('free_front_slots', 'NLB fronts a new game server could take.', (view) =>
      one(view, view.fronts?.free, { kind: view.fronts?.kind ?? '' }),
    ),
    gauge('free_eni_addresses', 'ENI addresses assigned to nodes and held by no pod.', (view) =>
      one(view, view.eni?.freeAddresses),
    ),
    gauge('stale', '1 when a pass of the cluster has not recorded within two intervals.', (view) =>
      one(view, view.stale ? 1 : 0),
    ),
    gauge(
      'figures_age_seconds',
      'How old each pass’s capacity figures are.',
      (view) => [
        ...one(view, view.gameServers?.ageSeconds, { source: 'scale' }),
        ...one(view, view.hostPorts?.ageSeconds, { source: 'hostPorts' }),
        ...one(view, view.fronts?.ageSeconds, { source: 'fronts' }),
        ...one(view, view.eni?.ageSeconds, { source: 'eni' }),
      ],
      'seconds',
    ),
  ];
}

/**
 * Every cluster's reading at `now` in `format`: OpenMetrics ends in `# EOF`, the text format in
 * a line feed. A family without samples is left out.
 */
export function metricsText(
  format: ExpositionFormat,
  readings: readonly MetricsReading[],
  now: number,
): string {
  const lines = families(readings, now)
    .filter((family) => family.samples.length > 0)
    .flatMap((family) => familyText(format, family));
  return `${[...lines, ...(format === 'openmetrics' ? ['# EOF'] : [])].join('\n')}\n`;
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

/**
 * The generated regions of README.md and docs/: every figure a document quotes from a benchmark
 * is written here from the committed results (bench/results/NAME.json), between markers, so a
 * number is measured once and typed never. `npm run docs` rewrites the regions; a test checks
 * that every region is what the results say today.
 *
 * A region is `<!-- generated:KIND [ARG] -->` … `<!-- /generated -->`; what lies between is
 * replaced whole.
 */

/** One benchmark's committed results, as much of them as the documents read. */
export interface BenchResults {
  readonly machine?: {
    readonly cpus?: number;
    readonly node?: string;
    readonly date?: string;
    readonly commit?: string;
  };
  readonly command?: string;
  readonly targets?: readonly { target: string; pass: boolean; line: string }[];
  readonly [key: string]: unknown;
}

/** Every benchmark's results, by name (the file name without `.json`). */
export type ResultsByName = Readonly<Record<string, BenchResults>>;

const REGION = /<!-- generated:([a-z-]+)(?: ([a-z0-9-]+))? -->\n[\s\S]*?<!-- \/generated -->/g;

/** A table cell: pipes and line breaks would end the cell. */
const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

const number = (value: unknown): string =>
  typeof value === 'number' ? value.toLocaleString('en-US') : '?';

function benchOf(results: ResultsByName, name: string | undefined): BenchResults {
  const found = name === undefined ? undefined : results[name];
  if (!found) throw new Error(`no bench/results/${name}.json for a generated region`);
  return found;
}

/** When and where a benchmark ran, and how to run it again. */
function provenance(name: string, bench: BenchResults): string {
  const { machine } = bench;
  const date = machine?.date?.slice(0, 10) ?? 'an unrecorded date';
  const commit = machine?.commit ? ` at commit ${machine.commit.slice(0, 7)}` : '';
  const where = machine?.cpus ? ` on ${machine.cpus} cores` : '';
  return `Run ${date}${commit}${where} (Node ${machine?.node ?? '?'}): \`npm run bench -- ${name} --save\` measures it again and writes \`bench/results/${name}.json\`.`;
}

/** One benchmark's targets, each with its verdict and the measured line. */
function targetsTable(name: string, bench: BenchResults): string {
  const targets = bench.targets ?? [];
  return [
    provenance(name, bench),
    '',
    '| target | met | measured |',
    '|---|---|---|',
    ...targets.map((t) => `| ${cell(t.target)} | ${t.pass ? 'yes' : '**no**'} | ${cell(t.line)} |`),
  ].join('\n');
}

/** Every benchmark in one line each: its targets met, linked to its section. */
function summaryTable(results: ResultsByName): string {
  return [
    '| benchmark | targets met | its first target, as measured | last run |',
    '|---|---|---|---|',
    ...Object.keys(results)
      .sort()
      .map((name) => {
        const bench = benchOf(results, name);
        const targets = bench.targets ?? [];
        const met = targets.filter((t) => t.pass).length;
        const first = targets[0]?.line ?? '';
        return `| [\`${name}\`](docs/benchmarks.md#${name}) | ${met} of ${targets.length} | ${cell(first)} | ${bench.machine?.date?.slice(0, 10) ?? '?'} |`;
      }),
  ].join('\n');
}

interface EniRun {
  readonly name: string;
  readonly mutatingCalls?: number;
  readonly idleIps?: { readonly average?: number };
  readonly waitingPods?: number;
  readonly longestWaitSeconds?: number;
  /** The same after the cold start (the first hour), when every pool has been filled once. */
  readonly steadyState?: { readonly waitingPods?: number; readonly longestWaitSeconds?: number };
}

/**
 * The ENI benchmark's days: berth in both modes beside each peer, then the runs on subnets with a
 * prefix reservation; the whole day, and the steady state after the cold start.
 */
function eniModes(bench: BenchResults): string {
  const days = (bench.days ?? []) as readonly {
    day: string;
    berth: EniRun;
    berthOtherMode?: EniRun;
    peers?: readonly EniRun[];
    reserved?: { berth: EniRun; peers?: readonly EniRun[] };
  }[];
  return days
    .map((day) =>
      [
        `| on the ${day.day} day | mutating EC2 calls | idle addresses (average) | pods that waited | longest wait (s) | waited after the first hour | its longest wait (s) |`,
        '|---|---|---|---|---|---|---|',
        ...[
          day.berth,
          ...(day.berthOtherMode ? [day.berthOtherMode] : []),
          ...(day.peers ?? []),
          ...(day.reserved ? [day.reserved.berth, ...(day.reserved.peers ?? [])] : []),
        ].map(
          (run) =>
            `| ${cell(run.name)} | ${number(run.mutatingCalls)} | ${number(run.idleIps?.average)} | ${number(run.waitingPods)} | ${number(run.longestWaitSeconds)} | ${number(run.steadyState?.waitingPods)} | ${number(run.steadyState?.longestWaitSeconds)} |`,
        ),
      ].join('\n'),
    )
    .join('\n\n');
}

/**
 * Where the clean day's calls go, for berth at its defaults and each peer that makes the fewest:
 * each run's mutating calls by action, and per node.
 */
function eniCallMix(bench: BenchResults): string {
  const days = (bench.days ?? []) as readonly {
    day: string;
    berth: EniRun & { callsByAction?: Record<string, number> };
    peers?: readonly (EniRun & { callsByAction?: Record<string, number> })[];
  }[];
  const nodes = (bench.workload as { nodes?: number } | undefined)?.nodes ?? Number.NaN;
  const clean = days.find((day) => day.day === 'clean');
  if (clean === undefined) return '(no clean day in the results)';
  const fewest = Math.min(...(clean.peers ?? []).map((p) => p.mutatingCalls ?? Infinity));
  const runs = [clean.berth, ...(clean.peers ?? []).filter((p) => p.mutatingCalls === fewest)];
  return [
    `| on the clean day (${number(nodes)} nodes) | mutating EC2 calls | a node | idle addresses (average) | by action |`,
    '|---|---|---|---|---|',
    ...runs.map((run) => {
      const actions = Object.entries(run.callsByAction ?? {})
        // EC2's reads are its Describe calls; everything else a run made changed something.
        .filter(([action]) => !action.startsWith('Describe'))
        .map(([action, count]) => `${action} ${number(count)}`)
        .join(', ');
      const perNode = (run.mutatingCalls ?? Number.NaN) / nodes;
      return `| ${cell(run.name)} | ${number(run.mutatingCalls)} | ${perNode.toFixed(2)} | ${number(run.idleIps?.average)} | ${actions} |`;
    }),
  ].join('\n');
}

interface ScaleRun {
  readonly nodeHours?: number;
  readonly waitingPods?: number;
  readonly interruptedGames?: number;
}

/** The scale benchmark's days: berth beside each baseline, each against the clairvoyant schedule. */
function scaleDays(bench: BenchResults): string {
  const scenarios = (bench.scenarios ?? []) as readonly {
    scenario: string;
    berth: ScaleRun;
    /** berth on the 60 s schedule alone, as the Lambda runs it: information only. */
    berthScheduledOnly?: ScaleRun;
    baselines?: Readonly<Record<string, ScaleRun>>;
    floors?: { readonly clairvoyant?: number };
    clairvoyantNodeHours?: number;
  }[];
  return [
    '| day | scaler | node-hours | x the clairvoyant schedule | pods that waited | games interrupted |',
    '|---|---|---|---|---|---|',
    ...scenarios.flatMap((s) => {
      const clairvoyant = s.floors?.clairvoyant ?? s.clairvoyantNodeHours;
      const times = (hours?: number) =>
        hours !== undefined && clairvoyant ? (hours / clairvoyant).toFixed(3) : 'n/a';
      const row = (name: string, run: ScaleRun) =>
        `| ${s.scenario} | ${name} | ${number(run.nodeHours)} | ${times(run.nodeHours)} | ${number(run.waitingPods)} | ${number(run.interruptedGames)} |`;
      return [
        row('**berth**', s.berth),
        ...(s.berthScheduledOnly
          ? [row('berth-60s-schedule-only (information)', s.berthScheduledOnly)]
          : []),
        ...Object.entries(s.baselines ?? {}).map(([name, run]) => row(name, run)),
      ];
    }),
  ].join('\n');
}

/** The scale benchmark's weeks: per run, berth and each peer as tuned on the first week. */
function scaleWeeks(bench: BenchResults): string {
  const runs = (bench.weeks ?? []) as readonly {
    name: string;
    days: number;
    floors: { readonly clairvoyant: number };
    berth: ScaleRun;
    peers: Readonly<Record<string, ScaleRun & { readonly tunedPlaceholders?: number }>>;
  }[];
  return [
    '| run | scaler | placeholders (tuned on the first week) | node-hours | x the clairvoyant schedule | pods that waited | games interrupted |',
    '|---|---|---|---|---|---|---|',
    ...runs.flatMap((run) => {
      const row = (name: string, o: ScaleRun & { readonly tunedPlaceholders?: number }) =>
        `| ${run.name} | ${name} | ${o.tunedPlaceholders ?? '-'} | ${number(o.nodeHours)} | ${o.nodeHours === undefined ? 'n/a' : (o.nodeHours / run.floors.clairvoyant).toFixed(3)} | ${number(o.waitingPods)} | ${number(o.interruptedGames)} |`;
      return [
        row('**berth**', run.berth),
        ...Object.entries(run.peers).map(([name, o]) => row(name, o)),
      ];
    }),
  ].join('\n');
}

interface CostLine {
  readonly group: string;
  readonly item: string;
  readonly usd: number;
  readonly detail?: string;
}
interface CostPair {
  readonly onDemand: number;
  readonly provisioned: number;
}

const dollars = (value: number | undefined, digits = 2): string =>
  typeof value === 'number' ? `$${value.toFixed(digits)}` : '?';

/**
 * The cost benchmark's bill: the three figures of one cluster (what its sessions add, what a
 * stack costs with none, what each game node adds to the passes) beside the fleet's totals, then
 * the largest lines behind the first two.
 */
function costBill(bench: BenchResults): string {
  const one = (bench.oneCluster ?? {}) as {
    fixed?: CostPair;
    perMillionSessions?: CostPair;
    sessionFloor?: CostPair & { requests?: number; writes?: number };
    perGameNode?: CostPair;
    idleGameNodes?: number;
    fixedLines?: readonly CostLine[];
    perMillionSessionLines?: readonly CostLine[];
  };
  const bill = (bench.bill ?? {}) as {
    onDemand?: { total?: number };
    provisioned?: { total?: number };
  };
  const vpc = (bench.privateNetworkOption ?? {}) as { usd?: number };
  const inCluster = (bench.inCluster ?? {}) as { reserved?: { total?: number } };
  const [perSession, fixed] = bench.targets ?? [];
  const verdict = (target: { pass: boolean } | undefined, limit: string) =>
    `${limit} (${target?.pass ? 'met' : 'not met'})`;
  const largest = (lines: readonly CostLine[] | undefined, unit: string) =>
    [...(lines ?? [])]
      .filter((l) => l.usd >= 0.005)
      .sort((a, b) => b.usd - a.usd)
      .slice(0, 8)
      .map((l) => `${l.group}: ${l.item} ${dollars(l.usd)}${unit}`)
      .join('; ');
  return [
    provenance('cost', bench),
    '',
    '| one cluster | on-demand | provisioned | target |',
    '|---|---|---|---|',
    `| per million game sessions | ${dollars(one.perMillionSessions?.onDemand)} | ${dollars(one.perMillionSessions?.provisioned)} | ${verdict(perSession, '$2.00')} |`,
    `| the least a million sessions can cost: ${number(one.sessionFloor?.requests)} Lambda requests and ${number(one.sessionFloor?.writes)} writes each, nothing else | ${dollars(one.sessionFloor?.onDemand)} | ${dollars(one.sessionFloor?.provisioned)} | |`,
    `| fixed: a stack serving one cluster with no game sessions (${number(one.idleGameNodes)} game node) | ${dollars(one.fixed?.onDemand)} a month | ${dollars(one.fixed?.provisioned)} a month | ${verdict(fixed, '$6.00')} |`,
    `| the passes' work per game node beyond it | ${dollars(one.perGameNode?.onDemand, 3)} a month | ${dollars(one.perGameNode?.provisioned, 3)} a month | |`,
    `| **the reference fleet** (3 clusters, one stack) | ${dollars(bill.onDemand?.total)} a month | ${dollars(bill.provisioned?.total)} a month | |`,
    `| option \`-c vpc\` (interface endpoints) | +${dollars(vpc.usd)} a month | | |`,
    `| the in-cluster alternative's reservation | ${dollars(inCluster.reserved?.total)} a month | | |`,
    '',
    `Per million game sessions, the largest lines on on-demand: ${cell(largest(one.perMillionSessionLines, ''))}.`,
    '',
    `Fixed, the largest lines on on-demand: ${cell(largest(one.fixedLines, ' a month'))}.`,
  ].join('\n');
}

/** One kind of run of the CNI benchmark, as `bench/cni.ts` writes it. */
interface CniRun {
  readonly phase?: string;
  readonly run?: string;
  readonly runs?: number;
  readonly failed?: number;
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  readonly maxMs?: number;
}

/** The CNI benchmark's runs: every kind, one at a time and several at once. */
function cniRuns(bench: BenchResults): string {
  const runs = (bench.runs ?? []) as readonly CniRun[];
  return [
    '| phase | run | runs | failed | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|---|',
    ...runs.map(
      (r) =>
        `| ${cell(r.phase ?? '?')} | ${cell(r.run ?? '?')} | ${number(r.runs)} | ${number(r.failed)} | ${number(r.p50Ms)} | ${number(r.p99Ms)} | ${number(r.maxMs)} |`,
    ),
  ].join('\n');
}

/** The body of one region. */
function regionBody(kind: string, arg: string | undefined, results: ResultsByName): string {
  switch (kind) {
    case 'bench-summary':
      return summaryTable(results);
    case 'bench-targets':
      return targetsTable(arg ?? '', benchOf(results, arg));
    case 'eni-modes':
      return eniModes(benchOf(results, 'eni'));
    case 'eni-call-mix':
      return eniCallMix(benchOf(results, 'eni'));
    case 'scale-days':
      return scaleDays(benchOf(results, 'scale'));
    case 'scale-weeks':
      return scaleWeeks(benchOf(results, 'scale'));
    case 'cost-bill':
      return costBill(benchOf(results, 'cost'));
    case 'cni-runs':
      return cniRuns(benchOf(results, 'cni'));
    default:
      throw new Error(`unknown generated region "${kind}"`);
  }
}

/** The document with every generated region rewritten from `results`. */
export function renderRegions(text: string, results: ResultsByName): string {
  return text.replace(REGION, (_, kind: string, arg: string | undefined) => {
    const head = `<!-- generated:${kind}${arg ? ` ${arg}` : ''} -->`;
    return `${head}\n${regionBody(kind, arg, results)}\n<!-- /generated -->`;
  });
}

/** What `berth status` prints: the text of the reports the local host answers. */
import type { localCapacity, localHolders, localStatus } from '../shared/app/local-commands.js';

/** What `status --holder` answers. */
type Holdings = Awaited<ReturnType<typeof localHolders>>;

/** What `status` answers. */
type StatusReport = Awaited<ReturnType<typeof localStatus>>['reports'][number];

/** Left-aligned columns, two spaces apart. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

const percent = (used: number, size: number) =>
  `${size === 0 ? '0.0' : ((100 * used) / size).toFixed(1)}%`;

/** A holder as a line names it: `Service games/lobby`, `Pod gs-1`, or `Service ?` unnamed. */
export function holderText(holder: Holdings[number]['holder']): string {
  if (holder.name === '') return `${holder.kind} ?`;
  return holder.namespace
    ? `${holder.kind} ${holder.namespace}/${holder.name}`
    : `${holder.kind} ${holder.name}`;
}

/** What `status --holder` prints: a row a holding, then why each unnamed holder is not named. */
export function formatHoldings(query: string, holdings: Holdings): string {
  if (holdings.length === 0) return `nobody holds ${query}`;
  const rows = table(
    ['VALUE', 'KIND', 'RANGE', 'HOLDER', 'STATE', 'ALLOCATION ID'],
    holdings.map((h) => [
      h.value,
      h.kind,
      h.range,
      holderText(h.holder),
      h.front === undefined ? h.state : `${h.state} (${h.front})`,
      h.allocationId,
    ]),
  );
  const notes = holdings.flatMap((h) => (h.note ? [`${h.value}: ${h.note}`] : []));
  return [...rows, ...(notes.length > 0 ? ['', ...notes] : [])].join('\n');
}

/** What `berth status` prints of one cluster. */
export function formatStatus(report: StatusReport): string {
  // Host ports are use counts: what predicts Pending pods is how many pods share the busiest port.
  const ranges = table(
    ['RANGE', 'KIND', 'SIZE', 'USED', 'USE', 'PODS PER PORT', 'LARGEST FREE BLOCK'],
    report.ranges.map((r) => [
      r.name,
      r.kind,
      // Past 2^53 (an IPv6 /64) the size is not exact, and a share of it says nothing: such a
      // range shows how many blocks of 32 its values spread over instead.
      Number.isSafeInteger(r.size) ? String(r.size) : r.size.toExponential(2),
      String(r.used),
      r.kind === 'hostPort'
        ? ''
        : 'blocks' in r && r.blocks !== undefined
          ? `${r.blocks} blocks`
          : percent(r.used, r.size),
      'minUse' in r ? `${r.minUse}-${r.maxUse}` : '',
      'largestFreeBlock' in r ? String(r.largestFreeBlock) : '',
    ]),
  );
  const pools =
    report.pools.length === 0
      ? ['no ENI pools']
      : table(
          [
            'NODE',
            'INSTANCE',
            'TYPE',
            'ENIS',
            'CAPACITY',
            'ASSIGNED',
            'IDLE',
            'COOLING',
            'HANDED OUT BY',
            'NODE REPORTED',
          ],
          report.pools.map((p) => [
            p.node,
            p.instanceId,
            p.instanceType,
            String(p.enis),
            String(p.capacity),
            String(p.assigned),
            String(p.idle),
            String(p.cooling),
            p.handout,
            p.reportedAt === undefined ? '-' : new Date(p.reportedAt).toISOString(),
          ]),
        );
  const autoMode = report.autoModeNodes ? [autoModeStatusLine(report.autoModeNodes)] : [];
  const vpcCni = report.vpcCniNodes ? vpcCniStatusLines(report.vpcCniNodes) : [];
  const cidrs = report.serviceCidrs ? ['', ...serviceCidrStatusLines(report.serviceCidrs)] : [];
  const nlbs = report.nlbPool ? ['', ...nlbPoolStatusLines(report.nlbPool)] : [];
  return [
    `cluster ${report.cluster}`,
    ...ranges,
    ...cidrs,
    ...nlbs,
    '',
    ...pools,
    ...autoMode,
    ...vpcCni,
  ].join('\n');
}

/** The NLB pool lines of `berth status`: what serves, and what is gone from ELBv2. */
export function nlbPoolStatusLines(report: NonNullable<StatusReport['nlbPool']>): string[] {
  if (report.unreadable !== undefined) return [`NLB pool: not read (${report.unreadable})`];
  return [
    `NLB pool: ${report.members.length} load balancer${report.members.length === 1 ? '' : 's'} serving${report.missing.length > 0 ? `, ${report.missing.length} gone` : ''}`,
    ...report.missing.map(
      (m) => `  gone: ${m.arn} (${m.why}): skipped until it is removed from the pool`,
    ),
  ];
}

/** The line of the EKS Auto Mode nodes berth leaves out of its pools. */
export function autoModeStatusLine(report: NonNullable<StatusReport['autoModeNodes']>): string {
  return report.count === undefined
    ? `EKS Auto Mode nodes: not counted (${report.why})`
    : `EKS Auto Mode nodes left out of ENI pools: ${report.count} (${report.why})`;
}

/** The lines of the nodes aws-node runs on, each with why it has no ENI pool. */
export function vpcCniStatusLines(report: NonNullable<StatusReport['vpcCniNodes']>): string[] {
  if (report.nodes === undefined) return [`nodes aws-node runs on: not read (${report.why})`];
  if (report.nodes.length === 0) return [];
  return [
    `no ENI pool on ${report.nodes.length} node${report.nodes.length === 1 ? '' : 's'}:`,
    ...report.nodes.map((node) => `  ${node}: ${report.why}`),
  ];
}

/** The ServiceCIDR lines of `berth status`. */
export function serviceCidrStatusLines(
  report: NonNullable<StatusReport['serviceCidrs']>,
): string[] {
  const lines = [
    `service CIDRs: allocating from ${report.allocatingFrom.join(', ') || 'none'} (the cluster's ServiceCIDRs: ${report.clusterCidrs.join(', ') || 'none'})`,
  ];
  if (report.followed.length > 0) lines.push(`  followed: ${report.followed.join(', ')}`);
  for (const refusal of report.refused) lines.push(`  refused: ${refusal.message}`);
  for (const entry of report.terminating) {
    lines.push(
      `  being deleted: ServiceCIDR ${entry.serviceCidr} (${entry.cidr}), still held by ${entry.holders.join(', ') || 'nothing'}`,
    );
  }
  return lines;
}

/** What `status --clusters` answers. */
type Capacity = Awaited<ReturnType<typeof localCapacity>>;

/** An age as a line says it: `12 s`, or `-` for a figure never recorded. */
const age = (seconds: number | undefined) => (seconds === undefined ? '-' : `${seconds} s`);

/**
 * What `status --clusters` prints: a row a cluster (its game servers, slots, fronts, addresses
 * and buffer, each with its age), a row a host port range, and why each stale cluster is stale.
 */
export function formatCapacity(view: Capacity): string {
  const count = (n: number | undefined) => (n === undefined ? '-' : String(n));
  const clusters = table(
    [
      'CLUSTER',
      'READY',
      'FREE SLOTS',
      'PENDING',
      'BUFFER',
      'NODES COMING',
      'FRONTS FREE',
      'ENI FREE',
      'STALE',
    ],
    view.clusters.map((c) => [
      c.cluster,
      c.gameServers === undefined
        ? '-'
        : `${c.gameServers.ready} (${age(c.gameServers.ageSeconds)})`,
      count(c.gameServers?.freeSlots),
      count(c.gameServers?.pending),
      count(c.buffer?.buffer),
      c.buffer === undefined
        ? '-'
        : c.buffer.nodesComing
          ? `yes (${c.buffer.slotsComing} slots)`
          : 'no',
      c.fronts === undefined
        ? '-'
        : `${c.fronts.free}/${c.fronts.total} (${age(c.fronts.ageSeconds)})`,
      c.eni === undefined ? '-' : `${c.eni.freeAddresses} (${age(c.eni.ageSeconds)})`,
      c.stale ? 'yes' : 'no',
    ]),
  );
  const ranges = view.clusters.flatMap((c) =>
    (c.hostPorts?.ranges ?? []).map((r) => [
      c.cluster,
      r.range,
      String(r.size),
      count(r.free),
      String(r.largestFreeBlock),
      age(c.hostPorts?.ageSeconds),
    ]),
  );
  const fleets = view.clusters.flatMap((c) =>
    Object.entries(c.gameServers?.readyByFleet ?? {}).map(([fleet, n]) => [
      c.cluster,
      fleet === '' ? '(no fleet)' : fleet,
      String(n),
    ]),
  );
  const stale = view.clusters.flatMap((c) =>
    c.staleBecause.map((why) => `${c.cluster} is stale: ${why}`),
  );
  return [
    `capacity at ${view.at}`,
    ...clusters,
    ...(fleets.length > 0 ? ['', ...table(['CLUSTER', 'FLEET', 'READY'], fleets)] : []),
    ...(ranges.length > 0
      ? [
          '',
          ...table(
            [
              'CLUSTER',
              'HOST PORT RANGE',
              'SIZE',
              'FREE (NODE, PORT)',
              'LARGEST FREE BLOCK',
              'AGE',
            ],
            ranges,
          ),
        ]
      : []),
    ...(stale.length > 0 ? ['', ...stale] : []),
  ].join('\n');
}

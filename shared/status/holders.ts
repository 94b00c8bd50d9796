/**
 * "Who holds this?": the owners of a cluster IP, a node port, a host port, or everything one
 * object (`namespace/name`) holds. Reads the store only: the answer is berth's record, which the
 * repair pass keeps in line with the cluster.
 */
import { rangeKey } from '../allocation/allocator.js';
import type { ValueRange } from '../allocation/range.js';
import { type AllocationStore, BLOCK_SIZE, type OwnerRecord } from '../allocation/store.js';
import type { HostPortStore, PodPortRecord } from '../hostports/store.js';
import { parseIp } from '../net/ip.js';

/** One value and who holds it. */
export interface Holding {
  readonly kind: 'clusterIP' | 'nodePort' | 'hostPort';
  readonly range: string;
  readonly value: string;
  readonly holder: { readonly kind: string; readonly namespace: string; readonly name: string };
  readonly allocationId: string;
  /** `releasing`: given back, still held until the settle step sees the change committed. */
  readonly state: 'held' | 'releasing';
}

/** What the lookup reads. */
export interface HolderLookupDeps {
  readonly clusterIps: readonly ValueRange[];
  readonly nodePorts: ValueRange;
  readonly allocations: Pick<AllocationStore, 'scanBlocks' | 'getOwner' | 'listOwners'>;
  readonly hostPorts: Pick<HostPortStore, 'listRecords'>;
}

/** The holders of `query`: an IP, a port number, or `namespace/name`. */
export async function findHolders(deps: HolderLookupDeps, query: string): Promise<Holding[]> {
  const trimmed = query.trim();
  if (parseIp(trimmed)) {
    const found = await Promise.all(
      deps.clusterIps.map((range) => exclusiveHolder(deps, range, trimmed)),
    );
    return found.flat();
  }
  if (/^\d{1,5}$/.test(trimmed)) {
    const port = Number(trimmed);
    return [
      ...(await exclusiveHolder(deps, deps.nodePorts, trimmed)),
      ...(await hostPortHolders(deps, (record) => record.ports.some((p) => p.port === port))),
    ];
  }
  const [namespace, name] = trimmed.split('/');
  if (!namespace || !name) return [];
  const holdings: Holding[] = [];
  for await (const record of deps.allocations.listOwners()) {
    if (record.owner.namespace === namespace && record.owner.name === name)
      holdings.push(...recordHoldings(deps, record));
  }
  holdings.push(
    ...(await hostPortHolders(
      deps,
      (record) => record.pod.namespace === namespace && record.pod.name === name,
    )),
  );
  return holdings;
}

async function exclusiveHolder(
  deps: HolderLookupDeps,
  range: ValueRange,
  value: string,
): Promise<Holding[]> {
  const offset = range.offsetOf(value);
  if (offset === undefined) return [];
  const index = Math.floor(offset / BLOCK_SIZE);
  let id: string | undefined;
  for await (const block of deps.allocations.scanBlocks(rangeKey(range), index, index)) {
    id = block.holders.get(offset % BLOCK_SIZE);
  }
  if (id === undefined) return [];
  const record = await deps.allocations.getOwner(id);
  const releasing = record?.releasing?.some(
    (c) => c.range === rangeKey(range) && c.offset === offset,
  );
  return [
    {
      kind: range.kind === 'clusterIP' ? 'clusterIP' : 'nodePort',
      range: range.name,
      value,
      holder: record
        ? { kind: record.owner.kind, namespace: record.owner.namespace, name: record.owner.name }
        : { kind: 'unknown', namespace: '', name: '(no owner record: the repair pass frees it)' },
      allocationId: id,
      state: releasing ? 'releasing' : 'held',
    },
  ];
}

function recordHoldings(deps: HolderLookupDeps, record: OwnerRecord): Holding[] {
  const ranges = [...deps.clusterIps, deps.nodePorts];
  const holder = {
    kind: record.owner.kind,
    namespace: record.owner.namespace,
    name: record.owner.name,
  };
  const of = (claim: { range: string; offset: number }, state: Holding['state']): Holding[] => {
    const range = ranges.find((r) => rangeKey(r) === claim.range);
    if (!range) return [];
    return [
      {
        kind: range.kind === 'clusterIP' ? 'clusterIP' : 'nodePort',
        range: range.name,
        value: range.valueAt(claim.offset),
        holder,
        allocationId: record.id,
        state,
      },
    ];
  };
  return [
    ...record.claims.flatMap((claim) => of(claim, 'held')),
    ...(record.releasing ?? []).flatMap((claim) => of(claim, 'releasing')),
  ];
}

async function hostPortHolders(
  deps: HolderLookupDeps,
  matches: (record: PodPortRecord) => boolean,
): Promise<Holding[]> {
  const holdings: Holding[] = [];
  for await (const record of deps.hostPorts.listRecords()) {
    if (!matches(record)) continue;
    for (const port of record.ports) {
      holdings.push({
        kind: 'hostPort',
        range: port.range,
        value: `${port.port}/${port.protocol}`,
        holder: {
          kind: 'Pod',
          namespace: record.pod.namespace,
          name: record.pod.name || `${record.pod.generateName}…`,
        },
        allocationId: record.id,
        state: 'held',
      });
    }
  }
  return holdings;
}

/**
 * "Who holds this?": the owners of a cluster IP, a node port, a host port, or everything one
 * object (`namespace/name`) holds. Reads the store only: the answer is berth's record, which the
 * repair pass keeps in line with the cluster. A Service whose CREATE wrote no owner record is
 * found by name through its allocation id, which names it.
 */

import { rangeKey } from '../allocation/allocator.js';
import type { AllocationStore, OwnerRecord } from '../allocation/store.js';
import type { HostPortStore, PodPortRecord } from '../hostports/store.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { parseIp } from '../net/ip.js';
import { blockIndexOf, lastBlockOf, type Offset, offsetAt, slotOf } from '../net/offset.js';
import { formatPortRange, type PortRange } from '../net/port-range.js';
import type { ValueRange } from '../net/value-range.js';
import { namesOwner } from '../vocabulary/allocation-id.js';
import { ALLOCATION_ID_ANNOTATION } from '../vocabulary/labels.js';
import { HolderQueryError } from './errors.js';
import { type FrontHolderDeps, frontHoldings, listenerPortHolders } from './front-holders.js';
import type { Holding } from './report.js';

/** What the lookup reads. */
export interface HolderLookupDeps {
  readonly clusterIps: readonly ValueRange[];
  readonly nodePorts: ValueRange;
  readonly allocations: Pick<AllocationStore, 'scanBlocks' | 'getOwner' | 'listOwners'>;
  readonly hostPorts: Pick<HostPortStore, 'listRecords'>;
  /** The cluster's Services, to name a holder that has no owner record; absent without a cluster. */
  readonly services?: Pick<ClusterApi, 'listServices'>;
  /** Public fronts, where the config has any. */
  readonly fronts?: FrontHolderDeps;
  /**
   * The port ranges a port may be held in besides the node ports (host port ranges, NLB
   * listener ports), each with the config key that names it: a port in none of them is refused.
   */
  readonly portRanges?: readonly { readonly key: string; readonly ports: PortRange }[];
}

/**
 * The port ranges of the config, as a message names them, when `port` is in none of them;
 * undefined when some range holds it.
 */
function rangesMissing(deps: HolderLookupDeps, port: number): readonly string[] | undefined {
  const others = deps.portRanges ?? [];
  const inside =
    deps.nodePorts.offsetOf(String(port)) !== undefined ||
    others.some(({ ports }) => port >= ports.base && port < ports.base + ports.size);
  return inside
    ? undefined
    : [
        `nodePortRange ${deps.nodePorts.name}`,
        ...others.map(({ key, ports }) => `${key} ${formatPortRange(ports)}`),
      ];
}

/** The holders of `query`: an IP, a port number, or `namespace/name`. */
export async function findHolders(deps: HolderLookupDeps, query: string): Promise<Holding[]> {
  const trimmed = query.trim();
  if (parseIp(trimmed)) {
    // An address no range allocates is answered as the mistake it is, not "nobody holds it".
    if (deps.clusterIps.every((range) => range.offsetOf(trimmed) === undefined)) {
      throw new HolderQueryError(
        `${trimmed} is outside every configured cluster IP range (serviceCIDRs: ${deps.clusterIps.map((range) => range.name).join(', ')}; their network and broadcast addresses are never allocated): berth holds nothing there; check the address, or --config`,
      );
    }
    const found = await Promise.all(
      deps.clusterIps.map((range) => exclusiveHolder(deps, range, trimmed)),
    );
    return found.flat();
  }
  if (/^\d+$/.test(trimmed)) {
    const port = Number(trimmed);
    const ranges = rangesMissing(deps, port);
    if (ranges) {
      throw new HolderQueryError(
        `${trimmed} is outside every configured port range (${ranges.join(', ')}): berth holds nothing there; check the port, or --config`,
      );
    }
    return [
      ...(await exclusiveHolder(deps, deps.nodePorts, trimmed)),
      ...(await hostPortHolders(deps, (record) => record.ports.some((p) => p.port === port))),
      ...(deps.fronts ? await listenerPortHolders(deps.fronts, port) : []),
    ];
  }
  const [namespace, name, more] = trimmed.split('/');
  if (!namespace || !name || more !== undefined) {
    throw new HolderQueryError(
      `"${trimmed}" is not a cluster IP, a port number or NAMESPACE/NAME: give one of those`,
    );
  }
  const holdings: Holding[] = [];
  const recorded = new Set<string>();
  for await (const record of deps.allocations.listOwners()) {
    recorded.add(record.id);
    if (record.owner.namespace === namespace && record.owner.name === name)
      holdings.push(...recordHoldings(deps, record));
  }
  holdings.push(...(await unrecordedHoldings(deps, { namespace, name }, recorded)));
  holdings.push(
    ...(await hostPortHolders(
      deps,
      (record) => record.pod.namespace === namespace && record.pod.name === name,
    )),
  );
  if (deps.fronts) holdings.push(...(await frontHoldings(deps.fronts, namespace, name)));
  return holdings;
}

async function exclusiveHolder(
  deps: HolderLookupDeps,
  range: ValueRange,
  value: string,
): Promise<Holding[]> {
  const offset = range.offsetOf(value);
  if (offset === undefined) return [];
  const index = blockIndexOf(offset);
  let id: string | undefined;
  for await (const block of deps.allocations.scanBlocks(rangeKey(range), index, index)) {
    id = block.holders.get(slotOf(offset));
  }
  if (id === undefined) return [];
  const record = await deps.allocations.getOwner(id);
  const releasing = record?.releasing?.some(
    (c) => c.range === rangeKey(range) && c.offset === offset,
  );
  const unnamed = record ? undefined : await unrecordedHolder(deps, id);
  return [
    {
      kind: range.kind === 'clusterIP' ? 'clusterIP' : 'nodePort',
      range: range.name,
      value,
      holder: record
        ? { kind: record.owner.kind, namespace: record.owner.namespace, name: record.owner.name }
        : (unnamed?.holder ?? NOBODY),
      ...(unnamed?.note ? { note: unnamed.note } : {}),
      allocationId: id,
      state: releasing ? 'releasing' : 'held',
    },
  ];
}

const NOBODY: Holding['holder'] = { kind: 'unknown', namespace: '', name: '' };

/**
 * The holder of a value whose id has no owner record: the Service that carries the id and whose
 * name the id names (its CREATE wrote no record), found among the cluster's Services; else a
 * leak the repair pass frees, or, without a cluster to ask, a Service it cannot name, with a
 * note saying how to find it.
 */
async function unrecordedHolder(
  deps: HolderLookupDeps,
  id: string,
): Promise<{ readonly holder: Holding['holder']; readonly note?: string }> {
  if (!deps.services) {
    return {
      holder: { kind: 'Service', namespace: '', name: '' },
      note: `not named: no owner record, and no cluster here to read it from; it is the Service annotated ${ALLOCATION_ID_ANNOTATION}=${id}; \`berth status --holder NAMESPACE/NAME\` checks one`,
    };
  }
  for await (const service of deps.services.listServices({ pageSize: 500 })) {
    const namespace = service.metadata?.namespace ?? '';
    const name = service.metadata?.name ?? '';
    const owner = { kind: 'Service', namespace, name };
    if (service.metadata?.annotations?.[ALLOCATION_ID_ANNOTATION] === id && namesOwner(id, owner)) {
      return { holder: owner };
    }
  }
  return {
    holder: NOBODY,
    note: 'no owner record, and no Service carries its id: a leak the repair pass frees',
  };
}

/**
 * What a Service created without an owner record holds: the values whose holder id names it
 * (`namesOwner`) and has no record. Reads every block of the exclusive ranges.
 */
async function unrecordedHoldings(
  deps: HolderLookupDeps,
  object: { readonly namespace: string; readonly name: string },
  recorded: ReadonlySet<string>,
): Promise<Holding[]> {
  const owner = { kind: 'Service', ...object };
  const holdings: Holding[] = [];
  for (const range of [...deps.clusterIps, deps.nodePorts]) {
    const last = lastBlockOf(range.exactSize);
    for await (const block of deps.allocations.scanBlocks(rangeKey(range), 0, last)) {
      for (const [slot, id] of block.holders) {
        if (recorded.has(id) || !namesOwner(id, owner)) continue;
        holdings.push({
          kind: range.kind === 'clusterIP' ? 'clusterIP' : 'nodePort',
          range: range.name,
          value: range.valueAt(offsetAt(block.index, slot)),
          holder: owner,
          allocationId: id,
          state: 'held',
        });
      }
    }
  }
  return holdings;
}

function recordHoldings(deps: HolderLookupDeps, record: OwnerRecord): Holding[] {
  const ranges = [...deps.clusterIps, deps.nodePorts];
  const holder = {
    kind: record.owner.kind,
    namespace: record.owner.namespace,
    name: record.owner.name,
  };
  const of = (claim: { range: string; offset: Offset }, state: Holding['state']): Holding[] => {
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

/**
 * What one game server holds of the public fronts, for `berth status --holder NAMESPACE/NAME`:
 * the address a player dials per port (the pod's `berth.dev/fronts`, where the cluster can be
 * read), its NLB listener slots and its accelerator destinations as the store has them. And who
 * holds a listener port, for `berth status --holder PORT`.
 */
import { frontedPortsOf } from '../fronts/pod-fronts.js';
import type { SlotChainStore } from '../fronts/slots/store.js';
import type { FrontStore, ListenerSlotRecord } from '../fronts/store.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { carriedAllocationId } from '../vocabulary/allocation-id.js';
import { FRONTS_ANNOTATION } from '../vocabulary/labels.js';
import { annotationOf } from '../vocabulary/opaque.js';
import type { Holding } from './report.js';

/** What the lookup reads. */
export interface FrontHolderDeps {
  readonly store: Pick<FrontStore, 'listSlots' | 'listDestinationSubnets' | 'listDestinations'>;
  /** The pod, for the addresses it was told; absent without a cluster. */
  readonly pods?: Pick<ClusterApi, 'getPod'>;
  /** NLB slots mode: the chains, whose seat on the pod's node is its front. */
  readonly chains?: Pick<SlotChainStore, 'chainAt'>;
}

/** `net/NAME/ID` of a load balancer ARN, shown as NAME. */
function loadBalancerName(arn: string): string {
  return arn.split('/').at(-2) ?? arn;
}

function slotHolding(record: ListenerSlotRecord): Holding {
  return {
    kind: 'nlbListener',
    range: record.slot.loadBalancerArn,
    value: `${loadBalancerName(record.slot.loadBalancerArn)}:${record.slot.port}`,
    holder: { kind: 'Pod', namespace: record.owner.namespace, name: record.owner.pod },
    allocationId: record.owner.allocationId,
    state: 'held',
    front: record.servingAt !== undefined ? 'serving' : record.state,
  };
}

/** The fronts `namespace/name` holds. */
export async function frontHoldings(
  deps: FrontHolderDeps,
  namespace: string,
  name: string,
): Promise<Holding[]> {
  const holdings: Holding[] = [];
  const holder = { kind: 'Pod', namespace, name };
  const pod = await deps.pods?.getPod(namespace, name);
  const told = pod
    ? annotationOf(pod as Readonly<Record<string, unknown>>, FRONTS_ANNOTATION)
    : undefined;
  const allocationId = (pod && carriedAllocationId(pod as Readonly<Record<string, unknown>>)) ?? '';
  if (told !== undefined) {
    try {
      for (const [portName, address] of Object.entries(
        JSON.parse(told) as Record<string, unknown>,
      )) {
        if (typeof address !== 'string') continue;
        holdings.push({
          kind: 'publicAddress',
          range: portName,
          value: address,
          holder,
          allocationId,
          state: 'held',
        });
      }
    } catch {
      // Not JSON any more: someone changed the annotation; the store's records still answer.
    }
  }
  // Slots mode: the chain of each NLB port's seat (the pod's node and host port), if it has one.
  const node = pod?.spec?.nodeName;
  if (deps.chains && pod && node) {
    for (const port of frontedPortsOf(pod as Readonly<Record<string, unknown>>)) {
      if (port.front !== 'nlb') continue;
      const chain = await deps.chains.chainAt(node, port.hostPort);
      if (chain?.holder === undefined || chain.holder.releasingAt !== undefined) continue;
      holdings.push({
        kind: 'nlbListener',
        range: chain.slot.loadBalancerArn,
        value: `${loadBalancerName(chain.slot.loadBalancerArn)}:${chain.slot.port}`,
        holder,
        allocationId,
        state: 'held',
        front: chain.holder.servingAt !== undefined ? 'serving' : 'registering',
      });
    }
  }
  const owns = (owner: { namespace: string; pod: string; allocationId: string }) =>
    owner.namespace === namespace && (owner.pod === name || owner.allocationId === allocationId);
  for (const record of await deps.store.listSlots()) {
    if (owns(record.owner)) holdings.push(slotHolding(record));
  }
  for (const subnetId of await deps.store.listDestinationSubnets()) {
    const { wanted, allowed } = await deps.store.listDestinations(subnetId);
    for (const cell of wanted) {
      if (!owns(cell.owner)) continue;
      holdings.push({
        kind: 'acceleratorDestination',
        range: subnetId,
        value: `${cell.address}:${cell.port}`,
        holder,
        allocationId: cell.owner.allocationId,
        state: 'held',
        front: allowed.get(cell.address)?.has(cell.port) === true ? 'allowed' : 'wanted',
      });
    }
  }
  return holdings;
}

/** The holders of NLB listener port `port`, on every load balancer of the pool. */
export async function listenerPortHolders(deps: FrontHolderDeps, port: number): Promise<Holding[]> {
  return (await deps.store.listSlots()).filter((r) => r.slot.port === port).map(slotHolding);
}

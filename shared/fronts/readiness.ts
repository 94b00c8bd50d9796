/**
 * A front is ready only when it routes. A listener in place does not send players anywhere yet:
 * its target serves only once its registration completes, minutes after RegisterTargets (Network
 * Load Balancers User Guide, "Register targets for your Network Load Balancer"). So each pass
 * asks ELBv2 for the health of the bound listeners not yet seen serving, records the ones that
 * now serve, and tells each live game server whose every front routes: `berth.dev/fronts-ready`
 * goes from `"false"` (written at its CREATE) to `"true"`. An accelerator destination routes
 * once berth's plan has allowed it. The patch tests the pod's allocation id, so a pod that is
 * not the owner (a copy, a name reused) is never told.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ClusterApi } from '../k8s/cluster-api.js';
import {
  ALLOCATION_ID_ANNOTATION,
  FRONTS_ANNOTATION,
  FRONTS_READY_ANNOTATION,
} from '../vocabulary/labels.js';
import { annotationOf } from '../vocabulary/opaque.js';
import { annotationPath } from '../vocabulary/patch.js';
import type { Elbv2Api } from './elbv2.js';
import { describeSkippingGone, ignoreGone, targetGroupName } from './nlb-front.js';
import { frontedPortsOf, toldFronts } from './pod-fronts.js';
import type { FrontStore, ListenerSlotRecord, SubnetDestinations } from './store.js';

/** What readiness reads and writes. */
export interface ReadinessDeps {
  readonly cluster: string;
  readonly store: Pick<FrontStore, 'markServing'>;
  readonly kube: Pick<ClusterApi, 'patchPod'>;
  readonly elbv2?: Elbv2Api;
  readonly now: () => number;
}

/**
 * In slots mode, the chain of a node's host port: the address players dial and whether its
 * target serves; undefined when the seat has no chain that may be told (none, leaving, or one
 * of the node's earlier address).
 */
export type SlotFront = (
  node: string,
  hostPort: number,
) => { readonly address: string; readonly serving: boolean } | undefined;

/** What the pass read: the live pods by the id they carry, the slots, each subnet's destinations. */
export interface ReadinessView {
  readonly owners: ReadonlyMap<string, { readonly pods: readonly V1Pod[] }>;
  readonly slots: readonly ListenerSlotRecord[];
  readonly destinations: ReadonlyMap<string, SubnetDestinations>;
  /** Slots mode: each seat's chain, as this pass left it. */
  readonly slotFront?: SlotFront;
}

/**
 * Target groups whose health one pass reads at most, the most recently bound first: a target
 * that never turns healthy (a node whose health port is closed) is read every pass, and the
 * reads share the account's describe budget (berth's half of ELBv2's 40 refilled at 10 a
 * second) with the pass's other reads; 100 plus their name lookups is about 21 s of it.
 */
export const MAX_HEALTH_READS_PER_PASS = 100;

/** Slot key: the owner's id and port name, which name its target group. */
const keyOf = (record: Pick<ListenerSlotRecord, 'owner' | 'portName'>) =>
  `${record.owner.allocationId}/${record.portName}`;

/**
 * Records the bound slots of live owners whose target now serves; answers the keys
 * (`<allocation id>/<port name>`) of every slot serving, those recorded before included.
 */
async function servingSlots(deps: ReadinessDeps, view: ReadinessView): Promise<Set<string>> {
  const serving = new Set(view.slots.filter((s) => s.servingAt !== undefined).map(keyOf));
  const pending = view.slots
    .filter(
      (s) =>
        s.state === 'bound' &&
        s.servingAt === undefined &&
        s.target !== undefined &&
        view.owners.has(s.owner.allocationId),
    )
    .sort((a, b) => (b.boundAt ?? 0) - (a.boundAt ?? 0))
    .slice(0, MAX_HEALTH_READS_PER_PASS);
  const api = deps.elbv2;
  if (api === undefined || pending.length === 0) return serving;
  const byName = new Map(
    pending.map((s) => [targetGroupName(deps.cluster, s.owner.allocationId, s.portName), s]),
  );
  const arns = new Map<string, string>();
  await describeSkippingGone([...byName.keys()], async (names) => {
    for (const group of (await api.describeTargetGroups({ names })).items) {
      arns.set(group.name, group.arn);
    }
  });
  for (const [name, record] of byName) {
    const arn = arns.get(name);
    if (arn === undefined || record.target === undefined) continue;
    const { ip, port } = record.target;
    const targets = await api.describeTargets(arn).catch((error: unknown) => {
      ignoreGone(error);
      return [];
    });
    const healthy = targets.some((t) => t.ip === ip && t.port === port && t.state === 'healthy');
    if (!healthy) continue;
    if (await deps.store.markServing(record.slot, record.owner.allocationId, deps.now())) {
      serving.add(keyOf(record));
    }
  }
  return serving;
}

/**
 * Whether each wanted accelerator destination is allowed, by `<allocation id>/<host port>`:
 * built once a pass, so telling 10,000 game servers reads every subnet's cells once, not once a
 * port.
 */
function allowedDestinations(view: ReadinessView): Map<string, boolean> {
  const allowed = new Map<string, boolean>();
  for (const subnet of view.destinations.values()) {
    for (const cell of subnet.wanted) {
      allowed.set(
        `${cell.owner.allocationId}/${cell.port}`,
        subnet.allowed.get(cell.address)?.has(cell.port) === true,
      );
    }
  }
  return allowed;
}

/**
 * Whether every fronted port of `pod` routes, and in slots mode the chains' addresses (port name
 * → `host:port`), which a pod bound before its seat had a chain has not been told yet.
 */
function routes(
  pod: V1Pod,
  allocationId: string,
  serving: ReadonlySet<string>,
  allowed: ReadonlyMap<string, boolean>,
  view: ReadinessView,
): { readonly routes: boolean; readonly slotAddresses: ReadonlyMap<string, string> } {
  const ports = frontedPortsOf(pod as Readonly<Record<string, unknown>>);
  const slotAddresses = new Map<string, string>();
  const node = pod.spec?.nodeName ?? '';
  const every = ports.every((port) => {
    if (port.front !== 'nlb') return allowed.get(`${allocationId}/${port.hostPort}`) === true;
    if (view.slotFront === undefined) return serving.has(`${allocationId}/${port.name}`);
    const front = view.slotFront(node, port.hostPort);
    if (front === undefined) return false;
    slotAddresses.set(port.name, front.address);
    return front.serving;
  });
  return { routes: ports.length > 0 && every, slotAddresses };
}

/**
 * Tells the live game servers whose fronts all route; answers how many were told this pass, and
 * how many could not be (a pod changed or gone since the listing: the next pass looks again).
 */
export async function tellReady(
  deps: ReadinessDeps,
  view: ReadinessView,
): Promise<{ readonly told: number; readonly failed: number }> {
  const serving = await servingSlots(deps, view);
  const allowed = allowedDestinations(view);
  let told = 0;
  let failed = 0;
  for (const [allocationId, { pods }] of view.owners) {
    // Two live pods carry the id: one is a copy, and berth cannot tell which, so it tells neither.
    const [pod, ...others] = pods;
    if (pod === undefined || others.length > 0) continue;
    const own = pod as Readonly<Record<string, unknown>>;
    const said = annotationOf(own, FRONTS_READY_ANNOTATION);
    if (said === 'true') continue;
    const found = routes(pod, allocationId, serving, allowed, view);
    if (!found.routes) continue;
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    // A slot's address the pod was not told at its binding (its seat had no chain yet).
    const before = toldFronts(own);
    const untold = [...found.slotAddresses].some(([port, address]) => before[port] !== address);
    const addresses = { ...before, ...Object.fromEntries(found.slotAddresses) };
    try {
      await deps.kube.patchPod(namespace, name, [
        { op: 'test', path: annotationPath(ALLOCATION_ID_ANNOTATION), value: allocationId },
        ...(untold
          ? [
              {
                op: annotationOf(own, FRONTS_ANNOTATION) === undefined ? 'add' : 'replace',
                path: annotationPath(FRONTS_ANNOTATION),
                value: JSON.stringify(addresses),
              } as const,
            ]
          : []),
        {
          op: said === undefined ? 'add' : 'replace',
          path: annotationPath(FRONTS_READY_ANNOTATION),
          value: 'true',
        },
      ]);
      told++;
    } catch {
      failed++;
    }
  }
  return { told, failed };
}

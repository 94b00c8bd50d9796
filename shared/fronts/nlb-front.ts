/**
 * One game-server port behind a Network Load Balancer: make its listener, and take it down.
 *
 * Making is three calls, each safe to repeat (ELBv2 answers a create with the same settings with
 * the existing resource): CreateTargetGroup (type `ip`, named from the owner so a redelivered
 * bind finds its own), RegisterTargets (the node's private address and the host port), then
 * CreateListener on the claimed port, in two steps (`makeTarget`, then `listen`), so a batch can
 * register every target before it makes any listener. OpenKruise Game's AWS plugin makes the
 * same three through the AWS Load Balancer Controller's objects; berth calls them directly,
 * within the account's budget. Taking down is the reverse: the listener first (a target group in
 * use cannot be deleted), then the target group; the slot is freed by the caller only after both
 * are gone.
 */
import { createHash } from 'node:crypto';
import { isNotFound } from '../aws/error-codes.js';
import type { PortProtocol } from '../hostports/model.js';
import type {
  Elbv2Api,
  Elbv2Tag,
  HealthCheck,
  Listener,
  ListenerProtocol,
  TargetGroup,
} from './elbv2.js';
import type { ListenerSlot } from './work.js';

/** Tag keys berth puts on what it makes, so repair can tell its own from anyone else's. */
export const FRONT_TAGS = {
  cluster: 'berth.dev/cluster',
  allocation: 'berth.dev/allocation-id',
  pod: 'berth.dev/pod',
  port: 'berth.dev/port',
  /** On a slot chain's listener and target group: its `<load balancer ARN>#<port>`. */
  chain: 'berth.dev/slot-chain',
} as const;

/** At most this many ARNs or names in one Describe call: the API's limit. */
const DESCRIBE_ITEMS_PER_CALL = 20;

/**
 * Reads `items` (ARNs or names) at most 20 a call. One deleted since it was listed fails its
 * whole call, so that call's items are asked one by one and the gone one is left out: there is
 * nothing of it to read.
 */
export async function describeSkippingGone<T>(
  items: readonly T[],
  read: (chunk: readonly T[]) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < items.length; i += DESCRIBE_ITEMS_PER_CALL) {
    const chunk = items.slice(i, i + DESCRIBE_ITEMS_PER_CALL);
    try {
      await read(chunk);
    } catch (error) {
      ignoreGone(error);
      if (chunk.length > 1) for (const item of chunk) await read([item]).catch(ignoreGone);
    }
  }
}

/** Tags of `arns` (listeners or target groups). */
export async function tagsOf(
  api: Elbv2Api,
  arns: readonly string[],
): Promise<Map<string, readonly Elbv2Tag[]>> {
  const tags = new Map<string, readonly Elbv2Tag[]>();
  await describeSkippingGone(arns, async (chunk) => {
    for (const [arn, own] of await api.describeTags(chunk)) tags.set(arn, own);
  });
  return tags;
}

/** Whether a listener's or target group's tags say berth made it for `cluster`. */
export function taggedFor(tags: readonly Elbv2Tag[] | undefined, cluster: string): boolean {
  return (tags ?? []).some((t) => t.key === FRONT_TAGS.cluster && t.value === cluster);
}

/** For a `.catch` of a delete or a read: a resource already gone is done. */
export function ignoreGone(error: unknown): void {
  if (!isNotFound(error)) throw error;
}

/** The listener protocol of a game-server port: TCPUDP is one TCP_UDP listener. */
export function listenerProtocolOf(protocol: PortProtocol): ListenerProtocol {
  return protocol === 'TCPUDP' ? 'TCP_UDP' : protocol;
}

/**
 * The target group's name: `berth-` and 26 hex digits of the owner's hash (32 characters, the
 * limit), so the same port of the same pod always names the same group and a redelivered bind
 * finds the one it made.
 */
export function targetGroupName(cluster: string, allocationId: string, portName: string): string {
  const digest = createHash('sha256')
    .update(`${cluster}/${allocationId}/${portName}`)
    .digest('hex');
  return `berth-${digest.slice(0, 26)}`;
}

/** One port to put behind its listener. */
export interface ListenerWork {
  readonly cluster: string;
  readonly slot: ListenerSlot;
  readonly allocationId: string;
  readonly namespace: string;
  readonly pod: string;
  readonly portName: string;
  readonly protocol: PortProtocol;
  readonly vpcId: string;
  readonly target: { readonly ip: string; readonly port: number };
  /** What the target group checks (`fronts.nlb.healthCheck`); ELBv2's default when absent. */
  readonly healthCheck?: HealthCheck;
}

function ownerTags(
  work: Pick<ListenerWork, 'cluster' | 'allocationId' | 'namespace' | 'pod' | 'portName'>,
): Elbv2Tag[] {
  return [
    { key: FRONT_TAGS.cluster, value: work.cluster },
    { key: FRONT_TAGS.allocation, value: work.allocationId },
    { key: FRONT_TAGS.pod, value: `${work.namespace}/${work.pod}` },
    { key: FRONT_TAGS.port, value: work.portName },
  ];
}

/** A target group made and its target registered: what the listener then forwards to. */
export interface MadeTarget {
  readonly group: TargetGroup;
  /** The listener already on the slot (an interrupted make got that far). */
  readonly listenerArn?: string;
}

/**
 * Makes the target group and registers its target: the first two of the three steps, apart
 * from the listener, so a burst's registrations can all start before any listener is made (a
 * target serves only minutes after it is registered, whatever else is done meanwhile). A
 * `resumed` make (work queued again after a part of it was done) first reads what is there, so
 * the steps done already cost a Describe, not a second mutating call.
 */
export async function makeTarget(
  elbv2: Elbv2Api,
  work: ListenerWork,
  resumed = false,
): Promise<MadeTarget> {
  const name = targetGroupName(work.cluster, work.allocationId, work.portName);
  const made = resumed ? await madeSoFar(elbv2, name, work) : {};
  const group =
    made.group ??
    (await elbv2.createTargetGroup({
      name,
      protocol: listenerProtocolOf(work.protocol),
      port: work.target.port,
      vpcId: work.vpcId,
      ...(work.healthCheck ? { healthCheck: work.healthCheck } : {}),
      tags: ownerTags(work),
    }));
  if (made.registered !== true) await elbv2.registerTargets(group.arn, [work.target]);
  return { group, ...(made.listenerArn !== undefined ? { listenerArn: made.listenerArn } : {}) };
}

/**
 * Makes the listener on the claimed port, forwarding to the made target group; returns its ARN,
 * or undefined when `mayListen` (asked right before CreateListener) says the slot is no longer
 * the owner's.
 */
export async function listen(
  elbv2: Elbv2Api,
  work: ListenerWork,
  made: MadeTarget,
  mayListen: () => Promise<boolean>,
): Promise<string | undefined> {
  if (made.listenerArn !== undefined) return made.listenerArn;
  // The target group is the owner's alone; a listener takes the public port: only while the slot
  // is still the owner's, and marked so that it is not freed under the call.
  if (!(await mayListen())) return undefined;
  const listener = await elbv2.createListener({
    loadBalancerArn: work.slot.loadBalancerArn,
    port: work.slot.port,
    protocol: listenerProtocolOf(work.protocol),
    targetGroupArn: made.group.arn,
    tags: ownerTags(work),
  });
  return listener.arn;
}

/** What an earlier, interrupted make of `work` left: its target group, target and listener. */
async function madeSoFar(
  elbv2: Elbv2Api,
  name: string,
  work: ListenerWork,
): Promise<{ group?: TargetGroup; registered?: boolean; listenerArn?: string }> {
  const group = await targetGroupNamed(elbv2, name);
  if (group === undefined) return {};
  const targets = await elbv2.describeTargets(group.arn);
  const registered = targets.some((t) => t.ip === work.target.ip && t.port === work.target.port);
  const listener = await listenerOnSlot(elbv2, work.slot, group.arn);
  return { group, registered, ...(listener ? { listenerArn: listener.arn } : {}) };
}

/** The target group of that name, or undefined: ELBv2 answers a name it lacks with an error. */
async function targetGroupNamed(elbv2: Elbv2Api, name: string): Promise<TargetGroup | undefined> {
  try {
    return (await elbv2.describeTargetGroups({ names: [name] })).items[0];
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The listener on the slot that forwards to `targetGroupArn`, if there is one. */
async function listenerOnSlot(
  elbv2: Elbv2Api,
  slot: ListenerSlot,
  targetGroupArn: string,
): Promise<Listener | undefined> {
  let marker: string | undefined;
  do {
    const page = await elbv2.describeListeners(slot.loadBalancerArn, marker);
    const listener = page.items.find(
      (l) => l.port === slot.port && l.targetGroupArn === targetGroupArn,
    );
    if (listener !== undefined) return listener;
    marker = page.nextMarker;
  } while (marker !== undefined);
  return undefined;
}

/**
 * Takes down the listener on the slot, if it forwards to the owner's target group, and the
 * target group. A listener on the slot that forwards elsewhere is not the owner's: it is left.
 * Gone already is done.
 */
export async function takeDownListener(
  elbv2: Elbv2Api,
  owner: { readonly cluster: string; readonly allocationId: string; readonly portName: string },
  slot: ListenerSlot,
): Promise<void> {
  const name = targetGroupName(owner.cluster, owner.allocationId, owner.portName);
  const group = await targetGroupNamed(elbv2, name);
  if (group === undefined) return;
  const listener = await listenerOnSlot(elbv2, slot, group.arn);
  if (listener !== undefined) await elbv2.deleteListener(listener.arn).catch(ignoreGone);
  await elbv2.deleteTargetGroup(group.arn).catch(ignoreGone);
}

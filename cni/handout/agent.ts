/**
 * The node agent's work, one pass at a time (berth-cni's DaemonSet runs it in a loop): learn the
 * node's set from berth, return the wanted addresses no container holds, and report the node's
 * use at watermarks rather than per pod, so berth grows the pool before it runs out.
 */
import type { NodeReport, NodeSet, SetAddress } from '../../shared/eni/handout/wire.js';
import { mayHandOut } from './choice.js';
import type { HandoutStore, Snapshot } from './store.js';

/** berth's node API, as the agent calls it. */
export interface SetClient {
  nodeSet(): Promise<NodeSet>;
  report(report: NodeReport): Promise<NodeSet>;
}

/** What the agent last told berth. */
export interface LastReport {
  readonly inUse: number;
  readonly at: number;
}

/** How often the agent looks at the node's use (its DaemonSet can set another). */
export const AGENT_PASS_MS = 10_000;

/** How often the agent reports with nothing else to say, so berth sees it alive. */
export const HEARTBEAT_MS = 5 * 60_000;

/**
 * How old the hidden file of a write cut short must be before the agent removes it: longer than
 * any plugin run (its timeout is at most 110 s), so no write still under way loses its file.
 */
export const UNFINISHED_GRACE_MS = 5 * 60_000;

/** What one pass did. */
export interface AgentPass {
  readonly reported: boolean;
  readonly inUse: number;
  readonly free: number;
  readonly returned: number;
  readonly last: LastReport | undefined;
}

/**
 * Whether the use changed enough to tell berth: by an eighth of the set (at least 2) since the
 * last report, or down to its last 2 free addresses, or a heartbeat due.
 */
export function reportDue(
  last: LastReport | undefined,
  use: { readonly inUse: number; readonly free: number; readonly total: number },
  now: number,
): boolean {
  if (last === undefined || now - last.at >= HEARTBEAT_MS) return true;
  const step = Math.max(2, Math.ceil(use.total / 8));
  if (Math.abs(use.inUse - last.inUse) >= step) return true;
  return use.free <= 2 && use.inUse !== last.inUse;
}

/** One pass of the agent at `now`, after the report `last`. */
export async function agentPass(
  store: HandoutStore,
  client: SetClient,
  last: LastReport | undefined,
  now: number,
): Promise<AgentPass> {
  await store.sweepUnfinished(now, UNFINISHED_GRACE_MS);
  const set = (await store.readSet()) ?? (await store.writeSet(await client.nodeSet()));
  await forgetReturnsTaken(store, set);
  const fresh = await returnEmpty(store, set);
  const snapshot = await store.snapshot();
  const free = set.addresses.filter((a) => mayHandOut(a, snapshot.use)).length;
  const counts = { inUse: snapshot.leases.length, free, total: set.addresses.length };
  if (fresh === 0 && !reportDue(last, counts, now)) {
    return { reported: false, ...counts, returned: 0, last };
  }
  const report = reportIn(snapshot, free === 0);
  await store.writeSet(await client.report(report));
  return {
    reported: true,
    ...counts,
    returned: report.returned.length,
    last: { inUse: counts.inUse, at: now },
  };
}

/** The node's report as its files say it now; `refill` when it has no free address. */
export async function reportOf(store: HandoutStore, refill: boolean): Promise<NodeReport> {
  return reportIn(await store.snapshot(), refill);
}

function reportIn(snapshot: Snapshot, refill: boolean): NodeReport {
  const { leases, returns, use } = snapshot;
  return {
    leased: leases.map((l) => ({ ip: l.ip, since: l.since })),
    rested: [...use.rested].flatMap(([ip, rest]) =>
      use.leased.has(ip) ? [] : [{ ip, at: rest.at }],
    ),
    returned: returns
      .filter((r) => r.stage === 'empty')
      .map((r) => ({ ip: r.ip, createdAt: r.createdAt })),
    refill,
  };
}

/**
 * Returns the wanted addresses no container holds, a prefix only whole: each is recorded as
 * being checked before the leases are read (so an ADD that leases it meanwhile sees it and gives
 * it up), then as empty, or forgotten when a container holds it. Answers how many are newly
 * empty.
 */
async function returnEmpty(store: HandoutStore, set: NodeSet): Promise<number> {
  const returns = new Map((await store.returns()).map((r) => [r.ip, r]));
  const units = new Map<string, SetAddress[]>();
  for (const address of set.addresses) {
    if (address.state !== 'wanted') continue;
    const key = address.prefix ?? address.ip;
    units.set(key, [...(units.get(key) ?? []), address]);
  }
  let fresh = 0;
  for (const unit of units.values()) {
    // A prefix goes back whole: wait until berth wants all 16 of its addresses.
    const prefix = unit[0]?.prefix;
    if (
      prefix !== undefined &&
      set.addresses.some((a) => a.prefix === prefix && a.state !== 'wanted')
    )
      continue;
    const settled = unit.every((a) => returns.get(a.ip)?.stage === 'empty');
    if (settled) continue;
    const before = new Set((await store.leases()).map((l) => l.ip));
    if (unit.some((a) => before.has(a.ip))) continue;
    for (const a of unit)
      await store.markReturn({ ip: a.ip, createdAt: a.createdAt, stage: 'checking' });
    const after = new Set((await store.leases()).map((l) => l.ip));
    if (unit.some((a) => after.has(a.ip))) {
      for (const a of unit) await store.forgetReturn(a.ip);
      continue;
    }
    for (const a of unit)
      await store.markReturn({ ip: a.ip, createdAt: a.createdAt, stage: 'empty' });
    fresh += unit.length;
  }
  return fresh;
}

/**
 * Forgets returns berth is done with: the address gone from the set (EC2 took it back), or in it
 * as a newer record. A return still being checked (a crash mid-way) is checked again.
 */
async function forgetReturnsTaken(store: HandoutStore, set: NodeSet): Promise<void> {
  const byIp = new Map(set.addresses.map((a) => [a.ip, a]));
  for (const entry of await store.returns()) {
    const address = byIp.get(entry.ip);
    if (address === undefined || address.createdAt !== entry.createdAt)
      await store.forgetReturn(entry.ip);
    else if (entry.stage === 'checking') await store.forgetReturn(entry.ip);
  }
}

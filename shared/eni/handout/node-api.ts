/**
 * berth's side of a node that hands its addresses out itself: `GET /v1/nodes/{node}/addresses`
 * gives the node its set (and from then on berth assigns nothing per pod there), and `POST` of
 * the same path takes the node's report: the addresses its containers hold, those it returned
 * empty, and whether it has none free (a refill, one call for the node rather than one per pod).
 * Both answer the set as it stands after.
 */
import type { EniDeps } from '../deps.js';
import { EniBadRequestError, EniConflictError } from '../errors.js';
import type { IpRecord, NodeState, PoolRecord } from '../model.js';
import { checkNode, poolFor, refillNow } from '../service.js';
import { setOf } from './view.js';
import { type NodeReport, type NodeSet, parseNodeReport } from './wire.js';

/** Writes of the pool record retried when another writer bumped its version meanwhile. */
const POOL_ATTEMPTS = 5;

/** `GET /v1/nodes/{node}/addresses`: the node's set; the pool is the node's to hand out from now. */
export async function handleNodeSet(deps: EniDeps, node: string): Promise<NodeSet> {
  checkNode(node);
  const pool = await rewritePool(deps, node, (p) => p);
  return setOf(pool, await deps.store.loadNode(node), deps.policy, deps.now());
}

/** `POST /v1/nodes/{node}/addresses`: takes the node's report and answers its set. */
export async function handleNodeReport(
  deps: EniDeps,
  node: string,
  body: unknown,
): Promise<NodeSet> {
  checkNode(node);
  const parsed = parseNodeReport(body);
  if ('problems' in parsed) throw new EniBadRequestError(parsed.problems);
  const { report } = parsed;
  const reportedAt = deps.now();
  const pool = await rewritePool(deps, node, (p) => ({
    ...p,
    nodeUse: { reportedAt, leased: report.leased, rested: report.rested },
  }));
  if (report.returned.length > 0) {
    const state = await deps.store.loadNode(node);
    await Promise.all(report.returned.map((r) => acceptReturn(deps, node, state, r)));
  }
  if (report.refill) await refillNow(deps, pool);
  return setOf(pool, await deps.store.loadNode(node), deps.policy, deps.now());
}

/**
 * The node's pool (created on first use), marked as handed out by the node and changed by
 * `change`, written at the version read; not written when neither changes it.
 */
async function rewritePool(
  deps: EniDeps,
  node: string,
  change: (pool: PoolRecord) => PoolRecord,
): Promise<PoolRecord> {
  for (let attempt = 1; ; attempt++) {
    const read = await poolFor(deps, node);
    const changed = change(read);
    // A node asking for its set again changes nothing: no write.
    if (changed === read && read.handout === 'node') return read;
    const next: PoolRecord = { ...changed, handout: 'node', version: read.version + 1 };
    try {
      await deps.store.putPool(next, read.version);
      return next;
    } catch (error) {
      if (!(error instanceof EniConflictError) || attempt >= POOL_ATTEMPTS) throw error;
    }
  }
}

/**
 * Records a wanted address as returned, when the node returned the very record it was asked for
 * (a record made since, the address assigned to the instance again, is not the one returned).
 */
async function acceptReturn(
  deps: EniDeps,
  node: string,
  state: NodeState,
  returned: NodeReport['returned'][number],
): Promise<void> {
  const record = state.ips.find((ip) => ip.ip === returned.ip);
  if (
    record?.state !== 'free' ||
    record.wantedSince === undefined ||
    record.returnedAt !== undefined ||
    record.createdAt !== returned.createdAt
  ) {
    return;
  }
  const put: IpRecord = { ...record, returnedAt: deps.now(), version: record.version + 1 };
  await commitQuietly(deps, node, put, record.version);
}

/** Marks free addresses wanted back, each at the version read; one changed meanwhile waits. */
export async function markWanted(
  deps: EniDeps,
  node: string,
  marks: readonly IpRecord[],
): Promise<void> {
  await Promise.all(marks.map((put) => commitQuietly(deps, node, put, put.version - 1)));
}

/** One conditional write; a record changed meanwhile is left for the next look. */
async function commitQuietly(
  deps: EniDeps,
  node: string,
  put: IpRecord,
  expectedVersion: number,
): Promise<void> {
  try {
    await deps.store.commit(node, [{ put, expectedVersion }]);
  } catch (error) {
    if (!(error instanceof EniConflictError)) throw error;
  }
}

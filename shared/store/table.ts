/**
 * The one DynamoDB table berth keeps its state in. CDK declares it from this definition and the
 * local stack creates it from the same one, so the two can never disagree.
 *
 * Every key starts with the cluster name, so several clusters share one table without sharing
 * any item. Each adapter in this folder owns its item families (the README's "Data model" lists
 * them all): exclusive ranges and owner records (dynamo-allocation-store), host port counts and
 * pod records (dynamo-host-port-store), leases, leak counters, ENI pools and the EC2 rate budget.
 * No secondary index: every read is a GetItem or a Query of one partition.
 */

/** Key schema and TTL attribute of the table. */
export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  timeToLiveAttribute: 'expiresAt',
} as const;

/**
 * How long past an item's own end its TTL lets DynamoDB delete it. The TTL only collects
 * garbage: every reader judges an item by its own expiry against its clock, while DynamoDB
 * deletes by its own clock, best-effort, possibly soon after the TTL (DynamoDB Local within about
 * two seconds). An hour keeps a clock a little behind DynamoDB's from losing a live lease.
 */
const TTL_MARGIN_S = 3600;

/**
 * The TTL attribute's value for an item that ends `lifetimeMs` from now: epoch seconds by the
 * wall clock, which DynamoDB keeps too, whatever clock the caller runs its logic on (a simulated
 * day runs months behind it, and would otherwise write items already expired to DynamoDB).
 */
export function timeToLiveFor(lifetimeMs: number): number {
  return Math.ceil((Date.now() + Math.max(lifetimeMs, 0)) / 1000) + TTL_MARGIN_S;
}

/** The default table name for the local stack. */
export const LOCAL_TABLE_NAME = 'berth';

/**
 * The partition key of an item no one cluster owns (the account's EC2 budget, subnet marks). A
 * cluster's own keys start `<cluster>#`, and a cluster name is a DNS label, which never starts
 * with `_`: no cluster, whatever its name, can own a shared item (or have `berth forget-cluster`
 * delete one).
 */
export function sharedPartitionKey(...parts: readonly string[]): string {
  return `_${parts.join('#')}`;
}

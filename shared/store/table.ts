/**
 * The one DynamoDB table berth keeps its state in. CDK declares it from this definition and the
 * local stack creates it from the same one, so the two can never disagree.
 *
 * Every key starts with the cluster name, so several clusters share one table without sharing
 * any item. Item families (see README, "Data model"):
 * - `<cluster>#range#<kind>#<name>` / `b#<block>`: one block of 32 consecutive values of a range;
 *   each taken value is an attribute `v<slot>` holding its owner's allocation id.
 * - `<cluster>#owners` / `<allocation id>`: the owner record, listing what one object holds.
 */

/** Key schema and TTL attribute of the table. */
export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  timeToLiveAttribute: 'expiresAt',
} as const;

/** The default table name for the local stack. */
export const LOCAL_TABLE_NAME = 'berth';

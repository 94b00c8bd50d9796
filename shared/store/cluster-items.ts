/**
 * Every item one cluster owns in berth's table, to take a cluster out without touching the
 * others: every key berth writes for a cluster starts with `<cluster>#` (allocation blocks and
 * records, host port counts and records, ENI pools, leases, the leak ledger, the scale memory).
 * What the clusters share (the account's EC2 budget, subnet marks) starts otherwise and stays;
 * a forgotten cluster's share of the budget decays away within minutes.
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  ScanCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { batchWrite } from './batch-write.js';
import { TABLE_SCHEMA } from './table.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** One item's key. */
export interface ItemKey {
  readonly pk: string;
  readonly sk: string;
}

/** Rounds of resending what DynamoDB left unprocessed before giving up. */
const UNPROCESSED_ROUNDS = 8;

/** What kind of item a key is, for the summary: the key's segment after the cluster. */
export function itemKind(pk: string): string {
  return pk.split('#')[1] ?? '(none)';
}

/** Lists the keys of every item of `cluster` (a Scan: this is an operator's rare, offline task). */
export async function* clusterItems(
  client: DynamoDBClient,
  tableName: string,
  cluster: string,
  onPage: (scanned: number) => void = () => {},
): AsyncIterable<ItemKey> {
  let start: Record<string, AttributeValue> | undefined;
  let scanned = 0;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: tableName,
        ConsistentRead: true,
        FilterExpression: 'begins_with(#pk, :prefix)',
        ProjectionExpression: '#pk, #sk',
        ExpressionAttributeNames: { '#pk': PK, '#sk': SK },
        ExpressionAttributeValues: { ':prefix': { S: `${cluster}#` } },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    scanned += page.ScannedCount ?? 0;
    onPage(scanned);
    for (const item of page.Items ?? []) {
      yield { pk: item[PK]?.S ?? '', sk: item[SK]?.S ?? '' };
    }
    start = page.LastEvaluatedKey;
  } while (start);
}

/** Deletes `keys` in batches, resending what DynamoDB leaves unprocessed; answers the count. */
export async function deleteItems(
  client: DynamoDBClient,
  tableName: string,
  keys: readonly ItemKey[],
  onBatch: (deleted: number) => void = () => {},
): Promise<number> {
  const requests: WriteRequest[] = keys.map((key) => ({
    DeleteRequest: { Key: { [PK]: { S: key.pk }, [SK]: { S: key.sk } } },
  }));
  const left = await batchWrite(client, tableName, requests, {
    rounds: UNPROCESSED_ROUNDS,
    onBatch,
  });
  if (left.length > 0) {
    throw new Error(
      `DynamoDB left ${left.length} deletes unprocessed after ${UNPROCESSED_ROUNDS} rounds; run the command again`,
    );
  }
  return keys.length;
}

/** Paged Query of one partition (strongly consistent unless asked), shared by berth's DynamoDB adapters. */
import {
  type AttributeValue,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandOutput,
} from '@aws-sdk/client-dynamodb';
import type { CapacityMeter } from './capacity.js';
import { TABLE_SCHEMA } from './table.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Where to query and what to count. */
export interface PartitionTarget {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly meter: CapacityMeter;
}

/** Which items of the partition, and how many per page. */
export interface PartitionQuery {
  /** Inclusive sort key bounds; the whole partition when absent. */
  readonly between?: { readonly from: string; readonly to: string };
  /** Items in the first page (a caller that usually stops early asks for few). */
  readonly firstPage?: number;
  /** Items in later pages; DynamoDB's 1 MB page limit applies when absent. */
  readonly nextPages?: number;
  /** Only the key attributes (to delete a partition, say); the read costs the same. */
  readonly keysOnly?: boolean;
  /** False: an eventually consistent read, half the cost, possibly a second behind. Default true. */
  readonly consistent?: boolean;
}

/** Streams the items of partition `pk` in sort key order, page by page, as the caller consumes them. */
export async function* queryPartition(
  target: PartitionTarget,
  pk: string,
  query: PartitionQuery = {},
): AsyncIterable<Record<string, AttributeValue>> {
  const { between, keysOnly, consistent = true } = query;
  let startKey: Record<string, AttributeValue> | undefined;
  let limit = query.firstPage ?? query.nextPages;
  do {
    const out: QueryCommandOutput = await target.client.send(
      new QueryCommand({
        TableName: target.tableName,
        KeyConditionExpression: between ? '#pk = :pk AND #sk BETWEEN :from AND :to' : '#pk = :pk',
        ExpressionAttributeNames: between || keysOnly ? { '#pk': PK, '#sk': SK } : { '#pk': PK },
        ...(keysOnly ? { ProjectionExpression: '#pk, #sk' } : {}),
        ExpressionAttributeValues: {
          ':pk': { S: pk },
          ...(between ? { ':from': { S: between.from }, ':to': { S: between.to } } : {}),
        },
        ConsistentRead: consistent,
        ...(limit === undefined ? {} : { Limit: limit }),
        ExclusiveStartKey: startKey,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    target.meter.read(out.ConsumedCapacity);
    yield* out.Items ?? [];
    startKey = out.LastEvaluatedKey;
    limit = query.nextPages;
  } while (startKey);
}

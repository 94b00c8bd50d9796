/**
 * The ceiling: one conditional PutItem of a unique key (`attribute_not_exists`), the least
 * DynamoDB can do for an exclusive claim. Bench-only.
 */
import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { isConditionFailed } from '../../shared/aws/error-codes.js';
import type { CapacityMeter } from '../../shared/store/capacity.js';
import { TABLE_SCHEMA } from '../../shared/store/table.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Where the items go and what is counted. */
export interface RawPutOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Partition key of every item; keys differ by sort key only, as values of one range would. */
  readonly partition: string;
  readonly meter: CapacityMeter;
}

/** Puts `{ pk, sk: key, owner }` unless the key exists; resolves to false when it did. */
export async function rawConditionalPut(
  options: RawPutOptions,
  key: string,
  owner: string,
): Promise<boolean> {
  try {
    const out = await options.client.send(
      new PutItemCommand({
        TableName: options.tableName,
        Item: { [PK]: { S: options.partition }, [SK]: { S: key }, owner: { S: owner } },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': PK },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    options.meter.write(out.ConsumedCapacity);
    return true;
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
    options.meter.write(undefined);
    options.meter.conditionFailures++;
    return false;
  }
}

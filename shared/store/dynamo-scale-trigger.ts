/**
 * The DynamoDB adapter of `ScaleTriggerStore`: one item per cluster, `<cluster>#scale` /
 * `trigger`, beside the scale memory. Every admission adds to `admitted` atomically and reads
 * the item back in the same write, so admissions in any number of containers are all counted;
 * a pass never resets the count (an admission between its listing and its write would be lost)
 * but records where it stood (`base`). A claim is a conditional write, so one caller wins per
 * debounce however many see the slack run out together.
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { NO_PASS_YET, type ScaleTriggerStore, type TriggerState } from '../scale/store.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { TABLE_SCHEMA } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** The item's attributes, always through placeholders (`base` is a reserved word). */
const NAMES = {
  '#slack': 'slack',
  '#passAt': 'passAtMs',
  '#claimedAt': 'claimedAtMs',
  '#admitted': 'admitted',
  '#base': 'base',
};

/** `ScaleTriggerStore` over berth's DynamoDB table. */
export class DynamoScaleTrigger implements ScaleTriggerStore {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #key: Record<string, AttributeValue>;

  constructor(options: TableLocation) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#key = { [PK]: { S: `${options.cluster}#scale` }, [SK]: { S: 'trigger' } };
    this.meter = options.meter ?? new CapacityMeter();
  }

  async passed(slack: number, atMs: number): Promise<void> {
    const out = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: this.#key,
        UpdateExpression:
          'SET #slack = :slack, #passAt = :at, #base = if_not_exists(#admitted, :zero)',
        ExpressionAttributeNames: pick('#slack', '#passAt', '#base', '#admitted'),
        ExpressionAttributeValues: {
          ':slack': { N: String(slack) },
          ':at': { N: String(atMs) },
          ':zero': { N: '0' },
        },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }

  async admitted(count: number): Promise<TriggerState> {
    const out = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: this.#key,
        UpdateExpression: 'ADD #admitted :count',
        ExpressionAttributeNames: pick('#admitted'),
        ExpressionAttributeValues: { ':count': { N: String(count) } },
        ReturnValues: 'ALL_NEW',
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
    return stateOf(out.Attributes ?? {});
  }

  async claim(atMs: number, debounceMs: number): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#key,
          UpdateExpression: 'SET #claimedAt = :at',
          ConditionExpression:
            '(attribute_not_exists(#passAt) OR #passAt <= :cut) AND ' +
            '(attribute_not_exists(#claimedAt) OR #claimedAt <= :cut)',
          ExpressionAttributeNames: pick('#passAt', '#claimedAt'),
          ExpressionAttributeValues: {
            ':at': { N: String(atMs) },
            ':cut': { N: String(atMs - debounceMs) },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }
}

/** The placeholders an expression uses (DynamoDB refuses unused ones). */
function pick(...names: (keyof typeof NAMES)[]): Record<string, string> {
  return Object.fromEntries(names.map((name) => [name, NAMES[name]]));
}

/** The trigger's state from the item: before any pass, `NO_PASS_YET`'s slack and time. */
function stateOf(item: Record<string, AttributeValue>): TriggerState {
  const number = (name: string): number | undefined => {
    const text = item[name]?.N;
    return text === undefined ? undefined : Number(text);
  };
  const askedAt = Math.max(
    number('passAtMs') ?? NO_PASS_YET.passAtMs,
    number('claimedAtMs') ?? NO_PASS_YET.passAtMs,
  );
  return {
    slack: number('slack') ?? NO_PASS_YET.slack,
    passAtMs: askedAt,
    admitted: (number('admitted') ?? 0) - (number('base') ?? 0),
  };
}

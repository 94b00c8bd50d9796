/**
 * The DynamoDB adapter of `Lease`. One item per lease, `<cluster>#lease` / `<name>`, holding the
 * holder and the expiry in epoch ms; every change is a conditional write, so two contenders
 * never both win. The table's TTL attribute `expiresAt` (epoch seconds) lets DynamoDB sweep
 * abandoned leases; correctness never waits for that sweep, since the conditions compare
 * `expiresAtMs` with the caller's clock. Clock skew between holders eats into the TTL, so TTLs
 * are minutes, not seconds.
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { LeaseLostError } from '../lease/errors.js';
import type { Lease, LeaseAttempt, LeaseGrant } from '../lease/lease.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { TABLE_SCHEMA, timeToLiveFor } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK, timeToLiveAttribute: TTL } = TABLE_SCHEMA;

/** Where the leases live, and the clock that decides expiry. */
export interface DynamoLeaseOptions extends TableLocation {
  /** Epoch ms. */
  readonly now: () => number;
}

/** `Lease` over berth's DynamoDB table. */
export class DynamoLease implements Lease {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #cluster: string;
  readonly #now: () => number;

  constructor(options: DynamoLeaseOptions) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#cluster = options.cluster;
    this.#now = options.now;
    this.meter = options.meter ?? new CapacityMeter();
  }

  #key(name: string): Record<string, AttributeValue> {
    return { [PK]: { S: `${this.#cluster}#lease` }, [SK]: { S: name } };
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<LeaseAttempt> {
    const now = this.#now();
    const expiresAtMs = now + ttlMs;
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: { ...this.#key(name), ...expiryAttributes(holder, expiresAtMs, ttlMs) },
          ConditionExpression:
            'attribute_not_exists(#pk) OR #expiresAtMs <= :now OR #holder = :holder',
          ExpressionAttributeNames: {
            '#pk': PK,
            '#expiresAtMs': 'expiresAtMs',
            '#holder': 'holder',
          },
          ExpressionAttributeValues: { ':now': { N: String(now) }, ':holder': { S: holder } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    if (!write.applied) {
      return {
        acquired: false,
        holder: write.item?.holder?.S ?? '',
        expiresAtMs: Number(write.item?.expiresAtMs?.N ?? 0),
      };
    }
    return { acquired: true, lease: { name, holder, expiresAtMs } };
  }

  async renewLease(name: string, holder: string, ttlMs: number): Promise<LeaseGrant> {
    const expiresAtMs = this.#now() + ttlMs;
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#key(name),
          UpdateExpression: 'SET #expiresAtMs = :expiresAtMs, #ttl = :ttl',
          ConditionExpression: '#holder = :holder',
          ExpressionAttributeNames: {
            '#expiresAtMs': 'expiresAtMs',
            '#ttl': TTL,
            '#holder': 'holder',
          },
          ExpressionAttributeValues: {
            ':expiresAtMs': { N: String(expiresAtMs) },
            ':ttl': { N: String(timeToLiveFor(ttlMs)) },
            ':holder': { S: holder },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    if (!write.applied) {
      throw new LeaseLostError(name, holder, { cause: write.failure });
    }
    return { name, holder, expiresAtMs };
  }

  async releaseLease(name: string, holder: string): Promise<boolean> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new DeleteItemCommand({
          TableName: this.#table,
          Key: this.#key(name),
          ConditionExpression: '#holder = :holder',
          ExpressionAttributeNames: { '#holder': 'holder' },
          ExpressionAttributeValues: { ':holder': { S: holder } },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return write.applied;
  }
}

function expiryAttributes(
  holder: string,
  expiresAtMs: number,
  ttlMs: number,
): Record<string, AttributeValue> {
  return {
    holder: { S: holder },
    expiresAtMs: { N: String(expiresAtMs) },
    [TTL]: { N: String(timeToLiveFor(ttlMs)) },
  };
}

/**
 * The account's rate budget in DynamoDB: one item per action family (EC2's, ELBv2's and Global
 * Accelerator's; the family is the sort key) under `_ec2-budget#<account scope>` (the Region, as
 * EC2 meters per account and Region; the partition keeps its first name, so buckets already
 * stored carry over), shared by every cluster and berth deployment that uses the table, holding
 * the bucket's level, when it was last updated, and each cluster's recent draws
 * (../ec2/fair-share.ts). Taking tokens is read, refill,
 * conditional write on the level read (optimistic concurrency), so every Lambda and CLI of every
 * cluster draws from the same buckets, each within its share while they are contended.
 */

import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { freshSharedBucket, type SharedBucketState, takeFairly } from '../ec2/fair-share.js';
import {
  type BudgetFamily,
  type BudgetGrant,
  type BudgetSpecs,
  budgetSpecs,
  type RateBudget,
} from '../ec2/rate-budget.js';
import type { BucketSpec } from '../ec2/token-bucket.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import type { TableLocation } from './location.js';
import { sharedPartitionKey, TABLE_SCHEMA } from './table.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Writers racing on one bucket retry this often before answering "try again shortly". */
const CONTENDED_ATTEMPTS = 5;
const CONTENDED_RETRY_MS = 50;

/** Where the budget lives, and who draws. */
export interface DynamoRateBudgetOptions extends TableLocation {
  /**
   * The account and Region the budget meters (the item key), or how to learn it (the EC2
   * client's resolved Region, which may come from a profile); `cluster` is who draws.
   */
  readonly scope: string | (() => Promise<string>);
  readonly now: () => number;
  /** The buckets that differ from `DEFAULT_ACCOUNT_BUDGET`. */
  readonly specs?: BudgetSpecs;
}

/** `RateBudget` shared through DynamoDB. */
export class DynamoRateBudget implements RateBudget {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #scope: string | (() => Promise<string>);
  #pk: string | undefined;
  readonly #cluster: string;
  readonly #now: () => number;
  readonly #specs: Readonly<Record<BudgetFamily, BucketSpec>>;

  constructor(options: DynamoRateBudgetOptions) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#scope = options.scope;
    this.#cluster = options.cluster;
    this.#now = options.now;
    this.#specs = budgetSpecs(options.specs);
    this.meter = options.meter ?? new CapacityMeter();
  }

  /** The budget's partition key, its scope resolved at the first take. */
  async #partition(): Promise<string> {
    this.#pk ??= sharedPartitionKey(
      'ec2-budget',
      typeof this.#scope === 'string' ? this.#scope : await this.#scope(),
    );
    return this.#pk;
  }

  async take(family: BudgetFamily, count = 1): Promise<BudgetGrant> {
    const spec = this.#specs[family];
    const pk = await this.#partition();
    let stored = await this.#read(pk, family);
    for (let attempt = 0; attempt < CONTENDED_ATTEMPTS; attempt++) {
      const now = this.#now();
      const outcome = takeFairly(
        spec,
        stored ?? freshSharedBucket(spec, now),
        now,
        this.#cluster,
        count,
      );
      if (!outcome.granted) {
        // A refused cluster is recorded as waiting (best effort: a lost race only delays it a
        // take), so a better-served one lets it go first.
        if (outcome.announced) await this.#write(pk, family, outcome.state, stored);
        return { granted: false, retryAfterMs: outcome.retryAfterMs };
      }
      const current = await this.#write(pk, family, outcome.state, stored);
      if (current === 'written') return { granted: true, retryAfterMs: 0 };
      stored = current;
    }
    return { granted: false, retryAfterMs: CONTENDED_RETRY_MS };
  }

  async #read(pk: string, family: BudgetFamily): Promise<SharedBucketState | undefined> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: { [PK]: { S: pk }, [SK]: { S: family } },
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    return out.Item ? decodeBucket(out.Item) : undefined;
  }

  /** Writes the new level if the stored one is still `expected`; else answers what is stored now. */
  async #write(
    pk: string,
    family: BudgetFamily,
    next: SharedBucketState,
    expected: SharedBucketState | undefined,
  ): Promise<'written' | SharedBucketState | undefined> {
    const write = await conditionalWrite(this.meter, () =>
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: {
            [PK]: { S: pk },
            [SK]: { S: family },
            tokens: { N: String(next.tokens) },
            updatedAt: { N: String(next.updatedAt) },
            draws: numberMap(next.draws),
            waiting: numberMap(next.waiting),
          },
          ...(expected
            ? {
                ConditionExpression: '#tokens = :tokens AND #updatedAt = :updatedAt',
                ExpressionAttributeNames: { '#tokens': 'tokens', '#updatedAt': 'updatedAt' },
                ExpressionAttributeValues: {
                  ':tokens': { N: String(expected.tokens) },
                  ':updatedAt': { N: String(expected.updatedAt) },
                },
              }
            : {
                ConditionExpression: 'attribute_not_exists(#pk)',
                ExpressionAttributeNames: { '#pk': PK },
              }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    if (!write.applied) {
      return write.item ? decodeBucket(write.item) : undefined;
    }
    return 'written';
  }
}

function decodeBucket(item: Record<string, AttributeValue>): SharedBucketState {
  return {
    tokens: Number(item.tokens?.N ?? 0),
    updatedAt: Number(item.updatedAt?.N ?? 0),
    waiting: Object.fromEntries(
      Object.entries(item.waiting?.M ?? {}).map(([cluster, since]) => [
        cluster,
        Number(since.N ?? 0),
      ]),
    ),
    draws: Object.fromEntries(
      Object.entries(item.draws?.M ?? {}).map(([cluster, drawn]) => [
        cluster,
        Number(drawn.N ?? 0),
      ]),
    ),
  };
}

function numberMap(values: Readonly<Record<string, number>>): AttributeValue {
  return {
    M: Object.fromEntries(Object.entries(values).map(([key, n]) => [key, { N: String(n) }])),
  };
}

/** What every range baseline is built from: where its items live, and what is counted. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ValueRange } from '../../shared/net/value-range.js';
import type { CapacityMeter } from '../../shared/store/capacity.js';

export interface RangeBaselineOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Keys are prefixed with it, as berth's are with the cluster. */
  readonly cluster: string;
  readonly range: ValueRange;
  readonly random: () => number;
  readonly meter: CapacityMeter;
}

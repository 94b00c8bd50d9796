/** Where every berth DynamoDB adapter lives: one table, one cluster's keys, one usage meter. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { CapacityMeter } from './capacity.js';

/** The table, the cluster whose keys an adapter reads and writes, and what it counts. */
export interface TableLocation {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Every key the adapter writes starts with `<cluster>#`. */
  readonly cluster: string;
  /** Shared by adapters that should be counted together; each makes its own otherwise. */
  readonly meter?: CapacityMeter;
}

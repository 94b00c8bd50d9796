/** Test helpers for the shared DynamoDB Local: a fresh table per suite, so suites never interfere. */
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { dynamoClient } from '../../shared/store/client.js';
import { ensureTable } from '../../shared/store/ensure-table.js';

/** A client on the run's DynamoDB Local and a new, empty table. */
export async function freshTable(): Promise<{ client: DynamoDBClient; tableName: string }> {
  const client = dynamoClient({ endpoint: inject('dynamodbEndpoint') });
  const tableName = `t-${randomUUID()}`;
  await ensureTable(client, tableName);
  return { client, tableName };
}

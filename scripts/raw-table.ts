/**
 * A table read and written exactly as stored: a client without berth's schema-version middleware
 * (`shared/store/versioned-client.ts`), for layout fixtures captured and loaded as they are, and
 * for items a newer berth would write.
 */
import {
  type AttributeValue,
  BatchWriteItemCommand,
  DynamoDBClient,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';

type Item = Record<string, AttributeValue>;

/** A plain client on a local endpoint (DynamoDB Local's dummy credentials). */
export function rawClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'berth', secretAccessKey: 'berth-local' },
  });
}

/** Every item of the table as stored, in key order. */
export async function scanRaw(endpoint: string, tableName: string): Promise<Item[]> {
  const raw = rawClient(endpoint);
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const out = await raw.send(
      new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  raw.destroy();
  const key = (item: Item) => `${item.pk?.S}\u0000${item.sk?.S}`;
  return items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** Writes the items as they are, 25 a batch, resending what DynamoDB left unprocessed. */
export async function putRaw(endpoint: string, tableName: string, items: readonly Item[]) {
  const raw = rawClient(endpoint);
  for (let i = 0; i < items.length; i += 25) {
    const batch = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    let unprocessed: Record<string, (typeof batch)[number][]> | undefined = { [tableName]: batch };
    while (unprocessed && Object.keys(unprocessed).length > 0) {
      const out = await raw.send(new BatchWriteItemCommand({ RequestItems: unprocessed }));
      unprocessed = out.UnprocessedItems as typeof unprocessed;
    }
  }
  raw.destroy();
}

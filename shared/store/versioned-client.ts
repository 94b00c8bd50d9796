/**
 * The schema version (./schema-version.ts) applied where every request passes: a middleware on
 * the DynamoDB client. Each adapter keeps building its own items and expressions; the client
 * stamps and guards every write and checks every item it answers, so no write path, today's or
 * one added later, can forget the version, and no reader sees an item it would misread.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  HandlerExecutionContext,
  InitializeHandler,
  InitializeHandlerArguments,
} from '@smithy/types';
import { type Expressions, guarded, readable, stamped } from './schema-version.js';

type Item = Parameters<typeof stamped>[0];
type Input = Record<string, unknown>;

const NAME = 'berthSchemaVersion';

/** A single-item write with the guard, and the item it refused answered (to tell why). */
function guardedWrite(write: Input, update: boolean): Input {
  return {
    ...guarded(write as Input & Expressions, update),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** The request as sent: today's version stamped on what it writes, each write guarded. */
function versionedInput(command: string, input: Input): Input {
  switch (command) {
    case 'PutItemCommand':
      return guardedWrite({ ...input, Item: stamped(input.Item as Item) }, false);
    case 'UpdateItemCommand':
      return guardedWrite(input, true);
    case 'DeleteItemCommand':
      return guardedWrite(input, false);
    case 'TransactWriteItemsCommand':
      return {
        ...input,
        TransactItems: (input.TransactItems as Record<string, Input | undefined>[]).map(
          ({ Put, Update, Delete, ConditionCheck }) => ({
            ...(Put
              ? { Put: guardedWrite({ ...Put, Item: stamped(Put.Item as Item) }, false) }
              : {}),
            ...(Update ? { Update: guardedWrite(Update, true) } : {}),
            ...(Delete ? { Delete: guardedWrite(Delete, false) } : {}),
            ...(ConditionCheck ? { ConditionCheck: guardedWrite(ConditionCheck, false) } : {}),
          }),
        ),
      };
    case 'BatchWriteItemCommand':
      // No condition is possible in a batch: its puts are stamped, and what a batch rewrites
      // its caller read first, which refuses a newer item (the leak ledger's counters, a pool's
      // record before its node's items go). `berth forget-cluster` deletes every item of a
      // cluster whoever wrote it: that is what it is asked to do.
      return {
        ...input,
        RequestItems: Object.fromEntries(
          Object.entries(input.RequestItems as Record<string, Input[]>).map(([table, requests]) => [
            table,
            requests.map((request) => {
              const put = request.PutRequest as { Item: Item } | undefined;
              return put
                ? { ...request, PutRequest: { ...put, Item: stamped(put.Item) } }
                : request;
            }),
          ]),
        ),
      };
    default:
      return input;
  }
}

/** Every item an answer carries, whatever the command. */
function itemsIn(output: Record<string, unknown>): Item[] {
  const items: Item[] = [];
  for (const field of ['Item', 'Attributes'] as const) {
    if (output[field]) items.push(output[field] as Item);
  }
  if (Array.isArray(output.Items)) items.push(...(output.Items as Item[]));
  const responses = output.Responses;
  if (Array.isArray(responses)) {
    // TransactGetItems: one `{ Item }` per read.
    for (const response of responses as { Item?: Item }[])
      if (response.Item) items.push(response.Item);
  } else if (responses && typeof responses === 'object') {
    // BatchGetItem: items by table.
    for (const tableItems of Object.values(responses as Record<string, Item[]>))
      items.push(...tableItems);
  }
  return items;
}

/** The items a refused write answered: the failed condition's, or each cancelled transaction item's. */
function refusedItems(error: unknown): Item[] {
  if (typeof error !== 'object' || error === null) return [];
  const { Item: item, CancellationReasons: reasons } = error as {
    Item?: Item;
    CancellationReasons?: { Item?: Item }[];
  };
  return [...(item ? [item] : []), ...(reasons ?? []).flatMap((r) => (r.Item ? [r.Item] : []))];
}

function schemaVersionMiddleware(
  next: InitializeHandler<Input, Record<string, unknown>>,
  context: HandlerExecutionContext,
) {
  return async (args: InitializeHandlerArguments<Input>) => {
    const command = context.commandName ?? '';
    try {
      const result = await next({ ...args, input: versionedInput(command, args.input) });
      for (const item of itemsIn(result.output)) readable(item);
      return result;
    } catch (error) {
      // A write refused because the item is a newer berth's says so, not "condition failed".
      for (const item of refusedItems(error)) readable(item);
      throw error;
    }
  };
}

/**
 * The client, with every request stamped, guarded and checked for the schema version (added
 * once: a client handed to several adapters keeps one copy).
 */
export function versioned(client: DynamoDBClient): DynamoDBClient {
  if (!client.middlewareStack.identify().some((entry) => entry.startsWith(NAME))) {
    client.middlewareStack.add(schemaVersionMiddleware as never, {
      step: 'initialize',
      name: NAME,
    });
  }
  return client;
}

/**
 * What DynamoDB would bill for every request a code path sends, measured by a middleware on the
 * client rather than counted by hand. Each request is billed by AWS's rules from what it asked
 * and what came back:
 * - reads: the units DynamoDB Local reports (it sizes Get and Query as AWS does: 4 KB units,
 *   halved for eventually consistent reads, a missing item still one unit), at least one unit
 *   per Query or Scan page (Local reports 0 for an empty page; taken here as AWS's minimum);
 * - single-item writes: the reported units (1 KB units); a write refused by its condition is
 *   billed too, one unit, since every berth item is under 1 KB (checked by `largestItem`);
 * - transactions: 2 units per item and KB, refused or not. DynamoDB Local does not report them
 *   so (measured on small items: 1 item reports 2 units, 2 items 2, 3 items 3), so its figure
 *   for transactions is kept beside the billed one, never used.
 * Units go to the operation `measure` is running, if any: operations may run at once (writers
 * racing for the same counts), each request attributed to its own through an AsyncLocalStorage.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type {
  AttributeValue,
  ConsumedCapacity,
  DynamoDBClient,
  TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { itemSizeBytes, writeUnits } from '../support/item-size.js';

/** Data-plane commands that can return ConsumedCapacity; the middleware asks for it. */
const METERED_COMMANDS: ReadonlySet<string> = new Set([
  'GetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'BatchGetItemCommand',
  'TransactWriteItemsCommand',
  'TransactGetItemsCommand',
]);
const READ_COMMANDS: ReadonlySet<string> = new Set([
  'GetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'TransactGetItemsCommand',
]);

/** What one operation's requests add up to. */
export interface DynamoUsage {
  readRequests: number;
  writeRequests: number;
  /** Read request units AWS bills. */
  billedReadUnits: number;
  /** Write request units AWS bills, refused conditional writes and transactions included. */
  billedWriteUnits: number;
  /** What DynamoDB Local reported (transactions undercounted, refusals absent). */
  reportedReadUnits: number;
  reportedWriteUnits: number;
  /** Writes refused by their condition, and cancelled transactions. */
  refusedWrites: number;
  transactions: number;
  /** Items written inside transactions. */
  transactionItems: number;
  /** Requests by command name, e.g. `QueryCommand`. */
  byCommand: Record<string, number>;
}

/** An empty usage. */
export function emptyUsage(): DynamoUsage {
  return {
    readRequests: 0,
    writeRequests: 0,
    billedReadUnits: 0,
    billedWriteUnits: 0,
    reportedReadUnits: 0,
    reportedWriteUnits: 0,
    refusedWrites: 0,
    transactions: 0,
    transactionItems: 0,
    byCommand: {},
  };
}

/** `a + b`, field by field. */
export function addUsage(a: DynamoUsage, b: DynamoUsage): DynamoUsage {
  const byCommand = { ...a.byCommand };
  for (const [name, n] of Object.entries(b.byCommand)) byCommand[name] = (byCommand[name] ?? 0) + n;
  return {
    readRequests: a.readRequests + b.readRequests,
    writeRequests: a.writeRequests + b.writeRequests,
    billedReadUnits: a.billedReadUnits + b.billedReadUnits,
    billedWriteUnits: a.billedWriteUnits + b.billedWriteUnits,
    reportedReadUnits: a.reportedReadUnits + b.reportedReadUnits,
    reportedWriteUnits: a.reportedWriteUnits + b.reportedWriteUnits,
    refusedWrites: a.refusedWrites + b.refusedWrites,
    transactions: a.transactions + b.transactions,
    transactionItems: a.transactionItems + b.transactionItems,
    byCommand,
  };
}

/** One request as the middleware saw it. */
export interface DynamoRequest {
  readonly command: string;
  readonly input: Readonly<Record<string, unknown>>;
  readonly consumed: ConsumedCapacity | readonly ConsumedCapacity[] | undefined;
  /** The error's name when the request failed. */
  readonly error?: string;
}

const REFUSALS: ReadonlySet<string> = new Set([
  'ConditionalCheckFailedException',
  'TransactionCanceledException',
  'TransactionConflictException',
]);

function reportedUnits(consumed: DynamoRequest['consumed']): number {
  const list = consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed];
  return (list as ConsumedCapacity[]).reduce(
    (sum, c) => sum + (c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0)),
    0,
  );
}

/** Billed units of one transactional write item: 2 per KB of the item it puts, else 2. */
function transactionItemUnits(item: TransactWriteItem): number {
  const put = item.Put?.Item as Record<string, AttributeValue> | undefined;
  return 2 * (put ? writeUnits(itemSizeBytes(put)) : 1);
}

/** What AWS bills for one request, by the rules in this file's header. Pure. */
export function billRequest(request: DynamoRequest): DynamoUsage {
  const usage = emptyUsage();
  const { command, input, consumed, error } = request;
  usage.byCommand[command] = 1;
  if (error !== undefined && !REFUSALS.has(error)) return usage;
  const reported = reportedUnits(consumed);
  if (READ_COMMANDS.has(command)) {
    usage.readRequests = 1;
    usage.reportedReadUnits = reported;
    const paged = command === 'QueryCommand' || command === 'ScanCommand';
    const minimum = paged ? (input.ConsistentRead === true ? 1 : 0.5) : 0;
    usage.billedReadUnits = Math.max(reported, minimum);
    return usage;
  }
  usage.writeRequests = 1;
  usage.reportedWriteUnits = reported;
  if (command === 'TransactWriteItemsCommand') {
    const items = (input.TransactItems ?? []) as TransactWriteItem[];
    usage.transactions = 1;
    usage.transactionItems = items.length;
    usage.billedWriteUnits = items.reduce((sum, item) => sum + transactionItemUnits(item), 0);
    if (error !== undefined) usage.refusedWrites = 1;
    return usage;
  }
  if (error !== undefined) {
    usage.refusedWrites = 1;
    usage.billedWriteUnits = 1;
    return usage;
  }
  usage.billedWriteUnits = reported;
  return usage;
}

/**
 * Meters every data-plane request of one client. `measure` attributes the requests of one
 * operation, however many run at once.
 */
export class DynamoLedger {
  readonly #current = new AsyncLocalStorage<DynamoUsage>();
  /** Requests sent while no operation was being measured (set-up). */
  readonly unattributed: DynamoUsage = emptyUsage();

  constructor(client: DynamoDBClient) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = (context as { commandName?: string }).commandName ?? 'unknown';
        if (!METERED_COMMANDS.has(command)) return next(args);
        const input = args.input as Record<string, unknown>;
        // Asking for consumed capacity changes nothing else about a request.
        input.ReturnConsumedCapacity ??= 'TOTAL';
        try {
          const out = await next(args);
          const output = out.output as { ConsumedCapacity?: DynamoRequest['consumed'] };
          this.#record({ command, input, consumed: output.ConsumedCapacity });
          return out;
        } catch (error) {
          const name = (error as { name?: string }).name ?? 'Error';
          this.#record({ command, input, consumed: undefined, error: name });
          throw error;
        }
      },
      { step: 'initialize', name: 'berthCostLedger' },
    );
  }

  /** Runs `operation`, answering its result and the DynamoDB usage of its requests. */
  async measure<T>(operation: () => Promise<T>): Promise<{ value: T; usage: DynamoUsage }> {
    const usage = emptyUsage();
    return { value: await this.#current.run(usage, operation), usage };
  }

  #record(request: DynamoRequest): void {
    const billed = billRequest(request);
    const target = this.#current.getStore() ?? this.unattributed;
    Object.assign(target, addUsage(target, billed));
  }
}

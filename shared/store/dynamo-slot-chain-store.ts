/**
 * The DynamoDB adapter of `SlotChainStore`, in berth's one table. Item families:
 * - `<cluster>#fronts-chains` / `chain#<load balancer>#<5-digit port>`: one NLB slot chain (its
 *   load balancer's full ARN, port, claim time, made time and target group once made, version)
 *   and, while a node's host port holds it, the holder's fields (node, address, host port,
 *   assigned, registered, serving and releasing times); `<load balancer>` is the ARN's last two
 *   path parts (`<name>/<id>`), as in ./dynamo-front-store.ts;
 * - `<cluster>#fronts-chains` / `holder#<node>#<5-digit host port>`: the index of the chain that
 *   node's host port holds (`chain`: the chain item's sort key).
 *
 * Why the index: a binding asks for the one chain behind its node's host port, and reads it with
 * two GetItems (the index item, then the chain), not the whole pool: a Query of 3,300 chains at
 * every binding would be about 100 read units, where the two GetItems are 2.
 *
 * Why a write is one TransactWriteItems: the chain's Put (conditioned on the version its writer
 * read, or on being absent) and, when the holder changes, the old index item's Delete and the new
 * one's Put land together or not at all, so the chain and its index never disagree. The new
 * index item's condition (absent, or already this chain's) is what keeps one chain per node's
 * host port. A transaction costs twice a plain write; a chain is written a few times a node
 * lifetime (assigned, registered, serving, releasing, cleared).
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import {
  type ChainHolder,
  type SlotChain,
  type SlotChainStore,
  slotKey,
} from '../fronts/slots/store.js';
import type { ListenerSlot } from '../fronts/work.js';
import { CapacityMeter } from './capacity.js';
import { loadBalancerKey, paddedPort, startingWith } from './front-keys.js';
import type { TableLocation } from './location.js';
import { queryPartition } from './query.js';
import { TABLE_SCHEMA } from './table.js';
import { transactWrite } from './transact.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Where the store lives, and how it waits between attempts. */
export interface DynamoSlotChainStoreOptions extends TableLocation {
  /** Uniform in [0, 1): the jitter of a retry after a conflict. `Math.random` when absent. */
  readonly random?: () => number;
  /** Waits between attempts; `setTimeout` when absent. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The chain item's sort key. */
const chainSortKey = (slot: ListenerSlot): string =>
  `chain#${loadBalancerKey(slot.loadBalancerArn)}#${paddedPort(slot.port)}`;

/** The index item's sort key for a node's host port. */
const holderSortKey = (node: string, hostPort: number): string =>
  `holder#${node}#${paddedPort(hostPort)}`;

/** `SlotChainStore` over one DynamoDB table, scoped to one cluster. */
export class DynamoSlotChainStore implements SlotChainStore {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #cluster: string;
  readonly #random: () => number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: DynamoSlotChainStoreOptions) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#cluster = options.cluster;
    this.meter = options.meter ?? new CapacityMeter();
    this.#random = options.random ?? Math.random;
    this.#sleep = options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms)));
  }

  get #partition(): string {
    return `${this.#cluster}#fronts-chains`;
  }

  #key(sk: string): Record<string, AttributeValue> {
    return { [PK]: { S: this.#partition }, [SK]: { S: sk } };
  }

  async listChains(): Promise<SlotChain[]> {
    const chains: SlotChain[] = [];
    const target = { client: this.#client, tableName: this.#table, meter: this.meter };
    for await (const item of queryPartition(target, this.#partition, startingWith('chain#')))
      chains.push(decodeChain(item));
    return chains;
  }

  async chainAt(node: string, hostPort: number): Promise<SlotChain | undefined> {
    const index = await this.#get(this.#key(holderSortKey(node, hostPort)));
    const sk = index?.chain?.S;
    if (sk === undefined) return undefined;
    const item = await this.#get(this.#key(sk));
    if (item === undefined) return undefined;
    const chain = decodeChain(item);
    // The index and the chain are written together; a chain read here that names another holder
    // was written after the index was read, and is no longer this host port's.
    return chain.holder?.node === node && chain.holder.hostPort === hostPort ? chain : undefined;
  }

  async write(previous: SlotChain | undefined, next: SlotChain): Promise<boolean> {
    if (next.version !== (previous?.version ?? 0) + 1) return false;
    if (previous !== undefined && slotKey(previous.slot) !== slotKey(next.slot)) return false;
    const self = chainSortKey(next.slot);
    const items: TransactWriteItem[] = [
      {
        Put: {
          TableName: this.#table,
          Item: { ...this.#key(self), ...encodeChain(next) },
          ...(previous === undefined
            ? {
                ConditionExpression: 'attribute_not_exists(#pk)',
                ExpressionAttributeNames: { '#pk': PK },
              }
            : {
                ConditionExpression: '#version = :previous',
                ExpressionAttributeNames: { '#version': 'version' },
                ExpressionAttributeValues: { ':previous': { N: String(previous.version) } },
              }),
        },
      },
    ];
    const was = previous?.holder && holderSortKey(previous.holder.node, previous.holder.hostPort);
    const will = next.holder && holderSortKey(next.holder.node, next.holder.hostPort);
    if (was !== will) {
      if (was !== undefined)
        items.push({
          Delete: {
            TableName: this.#table,
            Key: this.#key(was),
            ConditionExpression: '#chain = :self',
            ExpressionAttributeNames: { '#chain': 'chain' },
            ExpressionAttributeValues: { ':self': { S: self } },
          },
        });
      if (will !== undefined)
        items.push({
          Put: {
            TableName: this.#table,
            Item: { ...this.#key(will), chain: { S: self } },
            // Another chain's index item here: the host port is that chain's, and this write waits.
            ConditionExpression: 'attribute_not_exists(#pk) OR #chain = :self',
            ExpressionAttributeNames: { '#pk': PK, '#chain': 'chain' },
            ExpressionAttributeValues: { ':self': { S: self } },
          },
        });
    }
    return this.#transact(items);
  }

  async #get(
    key: Record<string, AttributeValue>,
  ): Promise<Record<string, AttributeValue> | undefined> {
    const out = await this.#client.send(
      new GetItemCommand({
        TableName: this.#table,
        Key: key,
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.read(out.ConsumedCapacity);
    return out.Item;
  }

  /**
   * Sends the transaction; true when it landed, false when a condition refused it
   * (./transact.ts retries conflicts with concurrent transactions, throws other errors).
   */
  async #transact(items: readonly TransactWriteItem[]): Promise<boolean> {
    const target = {
      client: this.#client,
      meter: this.meter,
      random: this.#random,
      sleep: this.#sleep,
    };
    return (await transactWrite(target, items)).applied;
  }
}

function encodeChain(chain: SlotChain): Record<string, AttributeValue> {
  const { holder } = chain;
  return {
    lb: { S: chain.slot.loadBalancerArn },
    port: { N: String(chain.slot.port) },
    claimedAt: { N: String(chain.claimedAt) },
    ...(chain.madeAt === undefined ? {} : { madeAt: { N: String(chain.madeAt) } }),
    ...(chain.targetGroupArn === undefined ? {} : { targetGroupArn: { S: chain.targetGroupArn } }),
    version: { N: String(chain.version) },
    ...(holder === undefined ? {} : encodeHolder(holder)),
  };
}

function encodeHolder(holder: ChainHolder): Record<string, AttributeValue> {
  const optional = (name: string, at: number | undefined) =>
    at === undefined ? {} : { [name]: { N: String(at) } };
  return {
    node: { S: holder.node },
    address: { S: holder.address },
    hostPort: { N: String(holder.hostPort) },
    assignedAt: { N: String(holder.assignedAt) },
    ...optional('registeredAt', holder.registeredAt),
    ...optional('servingAt', holder.servingAt),
    ...optional('releasingAt', holder.releasingAt),
  };
}

function decodeChain(item: Record<string, AttributeValue>): SlotChain {
  const madeAt = item.madeAt?.N;
  const targetGroupArn = item.targetGroupArn?.S;
  const node = item.node?.S;
  return {
    slot: { loadBalancerArn: item.lb?.S ?? '', port: Number(item.port?.N ?? Number.NaN) },
    claimedAt: Number(item.claimedAt?.N ?? 0),
    ...(madeAt === undefined ? {} : { madeAt: Number(madeAt) }),
    ...(targetGroupArn === undefined ? {} : { targetGroupArn }),
    ...(node === undefined ? {} : { holder: decodeHolder(node, item) }),
    version: Number(item.version?.N ?? 0),
  };
}

function decodeHolder(node: string, item: Record<string, AttributeValue>): ChainHolder {
  const registeredAt = item.registeredAt?.N;
  const servingAt = item.servingAt?.N;
  const releasingAt = item.releasingAt?.N;
  return {
    node,
    address: item.address?.S ?? '',
    hostPort: Number(item.hostPort?.N ?? Number.NaN),
    assignedAt: Number(item.assignedAt?.N ?? 0),
    ...(registeredAt === undefined ? {} : { registeredAt: Number(registeredAt) }),
    ...(servingAt === undefined ? {} : { servingAt: Number(servingAt) }),
    ...(releasingAt === undefined ? {} : { releasingAt: Number(releasingAt) }),
  };
}

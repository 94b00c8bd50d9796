/**
 * The DynamoDB adapter of `FrontStore`, in berth's one table. Item families:
 * - `<cluster>#fronts-nlb` / `slot#<load balancer>#<5-digit port>`: a claimed listener slot (its
 *   load balancer's full ARN, owner, port name, protocol, claim time, state, target once bound);
 *   `<load balancer>` is the ARN's last two path parts (`<name>/<id>`), readable and unique
 *   among the load balancers of one account and Region;
 * - `<cluster>#fronts-nlb` / `count#<load balancer>`: how many slots of it are claimed;
 * - `<cluster>#fronts-nlb` / `pool`: the load balancers added at runtime, in the order added
 *   (fill-first placement takes the first with room);
 * - `<cluster>#fronts-ga` / `map#<subnet>`: the subnet's port mappings as encoded (tens of KB at
 *   most, far under the 400 KB item limit), `want#<subnet>#<address>#<5-digit port>`: a cell a
 *   live game server wants, and `allow#<subnet>#<address>`: the ports berth allowed there.
 *
 * A claim is one TransactWriteItems: a Put per slot (condition: absent) and, per load balancer,
 * an `ADD` to its count conditioned on the limit, so the count is exactly the number of slot
 * items and two claims racing for a load balancer's last listener cannot both land. A free is a
 * transaction too (the slot's owner-conditioned Delete, the count's `ADD -1`). Transactions cost
 * twice a plain write; a claim happens once per fronted port, and the count is the only way to
 * hold the limit without reading every slot inside the condition.
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { isTransactionConflict } from '../aws/error-codes.js';
import { MAX_LISTENERS_PER_NLB } from '../fronts/elbv2.js';
import { ListenerSlotTakenError, LoadBalancerFullError } from '../fronts/errors.js';
import type {
  DestinationCell,
  FrontStore,
  ListenerSlotRecord,
  SlotFree,
  SubnetDestinations,
  WantedDestination,
} from '../fronts/store.js';
import type { ListenerSlot } from '../fronts/work.js';
import { PORT_PROTOCOLS } from '../hostports/model.js';
import { CapacityMeter } from './capacity.js';
import { conditionalWrite } from './conditional-write.js';
import { loadBalancerKey, paddedPort, startingWith } from './front-keys.js';
import type { TableLocation } from './location.js';
import { queryPartition } from './query.js';
import { TABLE_SCHEMA } from './table.js';
import { conflictBackoffMs, TRANSACTION_ATTEMPTS, transactWrite } from './transact.js';
import { versioned } from './versioned-client.js';

const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;

/** Where the store lives, and how it waits between attempts. */
export interface DynamoFrontStoreOptions extends TableLocation {
  /** Uniform in [0, 1): the jitter of a retry after a conflict. `Math.random` when absent. */
  readonly random?: () => number;
  /** Waits between attempts; `setTimeout` when absent. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** `FrontStore` over one DynamoDB table, scoped to one cluster. */
export class DynamoFrontStore implements FrontStore {
  readonly meter: CapacityMeter;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #cluster: string;
  readonly #random: () => number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: DynamoFrontStoreOptions) {
    this.#client = versioned(options.client);
    this.#table = options.tableName;
    this.#cluster = options.cluster;
    this.meter = options.meter ?? new CapacityMeter();
    this.#random = options.random ?? Math.random;
    this.#sleep = options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms)));
  }

  #target() {
    return { client: this.#client, tableName: this.#table, meter: this.meter };
  }

  #nlbKey(sk: string): Record<string, AttributeValue> {
    return { [PK]: { S: `${this.#cluster}#fronts-nlb` }, [SK]: { S: sk } };
  }

  #gaKey(sk: string): Record<string, AttributeValue> {
    return { [PK]: { S: `${this.#cluster}#fronts-ga` }, [SK]: { S: sk } };
  }

  #slotKey(slot: ListenerSlot): Record<string, AttributeValue> {
    return this.#nlbKey(`slot#${loadBalancerKey(slot.loadBalancerArn)}#${paddedPort(slot.port)}`);
  }

  #countKey(loadBalancerArn: string): Record<string, AttributeValue> {
    return this.#nlbKey(`count#${loadBalancerKey(loadBalancerArn)}`);
  }

  async listSlots(): Promise<ListenerSlotRecord[]> {
    const records: ListenerSlotRecord[] = [];
    for await (const item of queryPartition(
      this.#target(),
      `${this.#cluster}#fronts-nlb`,
      startingWith('slot#'),
    ))
      records.push(decodeSlot(item));
    return records;
  }

  async claimSlots(records: readonly ListenerSlotRecord[]): Promise<void> {
    const adding = new Map<string, number>();
    const seen = new Set<string>();
    for (const record of records) {
      // One transaction may touch an item once: a slot named twice is taken (by this claim).
      const key = this.#slotKey(record.slot)[SK]?.S ?? '';
      if (seen.has(key)) throw new ListenerSlotTakenError(record.slot);
      seen.add(key);
      const arn = record.slot.loadBalancerArn;
      adding.set(arn, (adding.get(arn) ?? 0) + 1);
    }
    if (records.length === 0) return;
    for (const [arn, count] of adding) {
      // A count item not written yet passes its condition whatever it adds.
      if (count > MAX_LISTENERS_PER_NLB)
        throw new LoadBalancerFullError(arn, MAX_LISTENERS_PER_NLB);
    }
    const counters = [...adding];
    // Slots first: where both a slot and a count refuse, the slot's refusal is the one reported.
    const items: TransactWriteItem[] = [
      ...records.map((record) => ({
        Put: {
          TableName: this.#table,
          Item: { ...this.#slotKey(record.slot), ...encodeSlot(record) },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        },
      })),
      ...counters.map(([arn, count]) => ({
        Update: {
          TableName: this.#table,
          Key: this.#countKey(arn),
          UpdateExpression: 'SET #lb = :lb ADD #n :k',
          ConditionExpression: 'attribute_not_exists(#n) OR #n <= :room',
          ExpressionAttributeNames: { '#lb': 'lb', '#n': 'listeners' },
          ExpressionAttributeValues: {
            ':lb': { S: arn },
            ':k': { N: String(count) },
            ':room': { N: String(MAX_LISTENERS_PER_NLB - count) },
          },
        },
      })),
    ];
    const refused = await this.#transact(items);
    if (refused === undefined) return;
    const slot = records[refused]?.slot;
    if (slot) throw new ListenerSlotTakenError(slot);
    const arn = counters[refused - records.length]?.[0] ?? '';
    throw new LoadBalancerFullError(arn, MAX_LISTENERS_PER_NLB);
  }

  async markBound(
    slot: ListenerSlot,
    allocationId: string,
    bound: { target: { ip: string; port: number }; boundAt: number; pod: string },
  ): Promise<boolean> {
    // A pod's name is absent until known: the first name learned is kept.
    const learnsName = bound.pod !== '';
    return this.#updateOwned(slot, allocationId, {
      expression: `SET #state = :bound, #ip = :ip, #tport = :tport, #boundAt = :boundAt${learnsName ? ', #pod = if_not_exists(#pod, :pod)' : ''} REMOVE #making`,
      names: {
        '#making': 'makingUntil',
        '#state': 'state',
        '#ip': 'targetIp',
        '#tport': 'targetPort',
        '#boundAt': 'boundAt',
        ...(learnsName ? { '#pod': 'pod' } : {}),
      },
      values: {
        ':bound': { S: 'bound' },
        ':ip': { S: bound.target.ip },
        ':tport': { N: String(bound.target.port) },
        ':boundAt': { N: String(bound.boundAt) },
        ...(learnsName ? { ':pod': { S: bound.pod } } : {}),
      },
    });
  }

  async beginMaking(slot: ListenerSlot, allocationId: string, until: number): Promise<boolean> {
    return this.#updateOwned(slot, allocationId, {
      expression: 'SET #making = :until',
      names: { '#making': 'makingUntil' },
      values: { ':until': { N: String(until) } },
    });
  }

  /** Applies `update` to the slot while `allocationId` owns it; false when it does not. */
  async markServing(slot: ListenerSlot, allocationId: string, at: number): Promise<boolean> {
    // The first sighting is kept: a later pass that sees it again changes nothing.
    return this.#updateOwned(slot, allocationId, {
      expression: 'SET #serving = if_not_exists(#serving, :at)',
      names: { '#serving': 'servingAt', '#state': 'state' },
      values: { ':at': { N: String(at) }, ':bound': { S: 'bound' } },
      condition: '#state = :bound',
    });
  }

  async #updateOwned(
    slot: ListenerSlot,
    allocationId: string,
    update: {
      readonly expression: string;
      readonly names: Record<string, string>;
      readonly values: Record<string, AttributeValue>;
      /** Holds besides the owner's. */
      readonly condition?: string;
    },
  ): Promise<boolean> {
    const write = await this.#untilSettled(() =>
      conditionalWrite(this.meter, () =>
        this.#client.send(
          new UpdateItemCommand({
            TableName: this.#table,
            Key: this.#slotKey(slot),
            UpdateExpression: update.expression,
            ConditionExpression: `#owner = :owner${update.condition ? ` AND ${update.condition}` : ''}`,
            ExpressionAttributeNames: { ...update.names, '#owner': 'owner' },
            ExpressionAttributeValues: { ...update.values, ':owner': { S: allocationId } },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        ),
      ),
    );
    return write.applied;
  }

  async freeSlot(slot: ListenerSlot, allocationId: string, now: number): Promise<SlotFree> {
    const refused = await this.#transact([
      {
        Delete: {
          TableName: this.#table,
          Key: this.#slotKey(slot),
          ConditionExpression:
            '#owner = :owner AND (attribute_not_exists(#making) OR #making < :now)',
          ExpressionAttributeNames: { '#owner': 'owner', '#making': 'makingUntil' },
          ExpressionAttributeValues: { ':owner': { S: allocationId }, ':now': { N: String(now) } },
        },
      },
      {
        // Unconditioned: the slot's Delete decides, and the count follows it.
        Update: {
          TableName: this.#table,
          Key: this.#countKey(slot.loadBalancerArn),
          UpdateExpression: 'ADD #n :minusOne',
          ExpressionAttributeNames: { '#n': 'listeners' },
          ExpressionAttributeValues: { ':minusOne': { N: '-1' } },
        },
      },
    ]);
    if (refused === undefined) return 'freed';
    // Refused: another owner's, gone, or a bind still making its listener. The slot as it is now
    // tells which (a making that ended since is freed by the next attempt).
    const item = await this.#get(this.#slotKey(slot));
    return item?.owner?.S === allocationId && item.makingUntil !== undefined
      ? 'making'
      : 'not-held';
  }

  async listPoolAdditions(): Promise<string[]> {
    const item = await this.#get(this.#nlbKey('pool'));
    return (item?.arns?.L ?? []).map((arn) => arn.S ?? '');
  }

  async addToPool(loadBalancerArn: string): Promise<void> {
    // A list, not a set: the order added is the pool's order. Refused: already a member.
    await conditionalWrite(this.meter, () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: this.#nlbKey('pool'),
          UpdateExpression: 'SET #arns = list_append(if_not_exists(#arns, :none), :arn)',
          ConditionExpression: 'attribute_not_exists(#arns) OR NOT contains(#arns, :member)',
          ExpressionAttributeNames: { '#arns': 'arns' },
          ExpressionAttributeValues: {
            ':none': { L: [] },
            ':arn': { L: [{ S: loadBalancerArn }] },
            ':member': { S: loadBalancerArn },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
  }

  async getMappings(subnetId: string): Promise<string | undefined> {
    return (await this.#get(this.#gaKey(`map#${subnetId}`)))?.mappings?.S;
  }

  async putMappings(subnetId: string, encoded: string): Promise<void> {
    const out = await this.#client.send(
      new PutItemCommand({
        TableName: this.#table,
        Item: { ...this.#gaKey(`map#${subnetId}`), mappings: { S: encoded } },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }

  async want(destinations: readonly WantedDestination[]): Promise<void> {
    // A cell named twice in one call: the first naming is the want, as if they came in turn.
    const firsts = new Map<string, WantedDestination>();
    for (const wanted of destinations)
      if (!firsts.has(wantKey(wanted))) firsts.set(wantKey(wanted), wanted);
    // Refused: the cell is already this owner's, and stays as first wanted. Another owner's is
    // taken over: the scheduler binds a pod to a node's host port only once the port's previous
    // pod is gone, so the newer binding is the live one (the older owner's release then finds the
    // cell no longer its own and leaves it).
    await Promise.all(
      [...firsts.values()].map((wanted) =>
        conditionalWrite(this.meter, () =>
          this.#client.send(
            new PutItemCommand({
              TableName: this.#table,
              Item: {
                ...this.#gaKey(wantKey(wanted)),
                owner: { S: wanted.owner.allocationId },
                namespace: { S: wanted.owner.namespace },
                pod: { S: wanted.owner.pod },
                wantedAt: { N: String(wanted.wantedAt) },
              },
              ConditionExpression: 'attribute_not_exists(#pk) OR #owner <> :owner',
              ExpressionAttributeNames: { '#pk': PK, '#owner': 'owner' },
              ExpressionAttributeValues: { ':owner': { S: wanted.owner.allocationId } },
              ReturnConsumedCapacity: 'TOTAL',
            }),
          ),
        ),
      ),
    );
  }

  async unwant(allocationId: string, cells: readonly DestinationCell[]): Promise<void> {
    // Refused: the cell is no longer this owner's (or wanted at all): nothing to forget.
    await Promise.all(
      cells.map((cell) =>
        conditionalWrite(this.meter, () =>
          this.#client.send(
            new DeleteItemCommand({
              TableName: this.#table,
              Key: this.#gaKey(wantKey(cell)),
              ConditionExpression: '#owner = :owner',
              ExpressionAttributeNames: { '#owner': 'owner' },
              ExpressionAttributeValues: { ':owner': { S: allocationId } },
              ReturnConsumedCapacity: 'TOTAL',
            }),
          ),
        ),
      ),
    );
  }

  async listDestinations(subnetId: string): Promise<SubnetDestinations> {
    const wanted: WantedDestination[] = [];
    for await (const item of this.#queryGa(`want#${subnetId}#`)) wanted.push(decodeWanted(item));
    const allowed = new Map<string, Set<number>>();
    for await (const item of this.#queryGa(`allow#${subnetId}#`)) {
      const [, , address = ''] = (item[SK]?.S ?? '').split('#');
      allowed.set(address, new Set((item.ports?.NS ?? []).map(Number)));
    }
    return { wanted, allowed };
  }

  async listDestinationSubnets(): Promise<string[]> {
    // The two families' ranges, not the whole partition: the mapping items are the large ones.
    const subnets = new Set<string>();
    for (const prefix of ['allow#', 'want#']) {
      for await (const item of this.#queryGa(prefix)) {
        subnets.add((item[SK]?.S ?? '').split('#')[1] ?? '');
      }
    }
    return [...subnets];
  }

  async recordAllowed(subnetId: string, address: string, ports: readonly number[]): Promise<void> {
    // A number set cannot be empty: allowing no port records nothing.
    if (ports.length === 0) return;
    const out = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: this.#gaKey(`allow#${subnetId}#${address}`),
        UpdateExpression: 'ADD #ports :ports',
        ExpressionAttributeNames: { '#ports': 'ports' },
        ExpressionAttributeValues: { ':ports': { NS: [...new Set(ports)].map(String) } },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }

  async recordDenied(subnetId: string, address: string): Promise<void> {
    const out = await this.#client.send(
      new DeleteItemCommand({
        TableName: this.#table,
        Key: this.#gaKey(`allow#${subnetId}#${address}`),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    this.meter.write(out.ConsumedCapacity);
  }

  #queryGa(prefix: string): AsyncIterable<Record<string, AttributeValue>> {
    return queryPartition(this.#target(), `${this.#cluster}#fronts-ga`, startingWith(prefix));
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
   * Sends the transaction; answers undefined when it landed, or the index of the first item
   * whose condition refused it (../store/transact.ts retries conflicts, throws other errors).
   */
  async #transact(items: readonly TransactWriteItem[]): Promise<number | undefined> {
    const target = {
      client: this.#client,
      meter: this.meter,
      random: this.#random,
      sleep: this.#sleep,
    };
    const outcome = await transactWrite(target, items);
    return outcome.applied ? undefined : outcome.refused.indexOf(true);
  }

  /** Runs `write` again, after a jittered wait, while it loses to a concurrent transaction. */
  async #untilSettled<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (!isTransactionConflict(error) || attempt >= TRANSACTION_ATTEMPTS) throw error;
        this.meter.failedWrite();
        await this.#sleep(conflictBackoffMs(attempt, this.#random));
      }
    }
  }
}

function wantKey(cell: DestinationCell): string {
  return `want#${cell.subnetId}#${cell.address}#${paddedPort(cell.port)}`;
}

function encodeSlot(record: ListenerSlotRecord): Record<string, AttributeValue> {
  return {
    lb: { S: record.slot.loadBalancerArn },
    port: { N: String(record.slot.port) },
    owner: { S: record.owner.allocationId },
    namespace: { S: record.owner.namespace },
    // Absent until known, so that `markBound` keeps the first name learned (if_not_exists).
    ...(record.owner.pod ? { pod: { S: record.owner.pod } } : {}),
    portName: { S: record.portName },
    protocol: { S: record.protocol },
    claimedAt: { N: String(record.claimedAt) },
    state: { S: record.state },
    ...(record.target
      ? { targetIp: { S: record.target.ip }, targetPort: { N: String(record.target.port) } }
      : {}),
    ...(record.boundAt === undefined ? {} : { boundAt: { N: String(record.boundAt) } }),
    ...(record.servingAt === undefined ? {} : { servingAt: { N: String(record.servingAt) } }),
    ...(record.makingUntil === undefined ? {} : { makingUntil: { N: String(record.makingUntil) } }),
  };
}

function decodeSlot(item: Record<string, AttributeValue>): ListenerSlotRecord {
  const targetIp = item.targetIp?.S;
  const targetPort = item.targetPort?.N;
  const boundAt = item.boundAt?.N;
  const makingUntil = item.makingUntil?.N;
  const servingAt = item.servingAt?.N;
  return {
    slot: { loadBalancerArn: item.lb?.S ?? '', port: Number(item.port?.N ?? Number.NaN) },
    owner: {
      allocationId: item.owner?.S ?? '',
      namespace: item.namespace?.S ?? '',
      pod: item.pod?.S ?? '',
    },
    portName: item.portName?.S ?? '',
    protocol: PORT_PROTOCOLS.find((protocol) => protocol === item.protocol?.S) ?? 'UDP',
    claimedAt: Number(item.claimedAt?.N ?? 0),
    state: item.state?.S === 'bound' ? 'bound' : 'claimed',
    ...(targetIp === undefined || targetPort === undefined
      ? {}
      : { target: { ip: targetIp, port: Number(targetPort) } }),
    ...(boundAt === undefined ? {} : { boundAt: Number(boundAt) }),
    ...(servingAt === undefined ? {} : { servingAt: Number(servingAt) }),
    ...(makingUntil === undefined ? {} : { makingUntil: Number(makingUntil) }),
  };
}

function decodeWanted(item: Record<string, AttributeValue>): WantedDestination {
  const [, subnetId = '', address = '', port = ''] = (item[SK]?.S ?? '').split('#');
  return {
    subnetId,
    address,
    port: Number(port),
    owner: {
      allocationId: item.owner?.S ?? '',
      namespace: item.namespace?.S ?? '',
      pod: item.pod?.S ?? '',
    },
    wantedAt: Number(item.wantedAt?.N ?? 0),
  };
}

/**
 * The DynamoDB front store's answer to a write that lost to a concurrent transaction on the same
 * item: sent again after a jittered wait, a bounded number of times. DynamoDB Local runs its
 * transactions one at a time and never answers a conflict, so these answers are scripted.
 */
import {
  DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  TransactionConflictException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { ListenerSlotTakenError } from '../../shared/fronts/errors.js';
import { DynamoFrontStore } from '../../shared/store/dynamo-front-store.js';
import { TRANSACTION_ATTEMPTS as MAX_CONFLICT_ATTEMPTS } from '../../shared/store/transact.js';

const NLB =
  'arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/games-a/0123456789abcdef';
const SLOT = { loadBalancerArn: NLB, port: 10_001 };
const RECORD = {
  slot: SLOT,
  owner: { allocationId: 'a', namespace: 'games', pod: 'gs-a' },
  portName: 'game',
  protocol: 'UDP' as const,
  claimedAt: 1_000,
  state: 'claimed' as const,
};

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

function scripted() {
  const client = new DynamoDBClient({ region: 'local' });
  const mock = mockClient(client);
  const waits: number[] = [];
  const store = new DynamoFrontStore({
    client,
    tableName: 't',
    cluster: 'blue',
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  return { mock, store, waits };
}

describe('DynamoFrontStore under transaction conflicts', () => {
  it('sends a claim again after a jittered wait until it lands', async () => {
    const { mock, store, waits } = scripted();
    mock
      .on(TransactWriteItemsCommand)
      .rejectsOnce(cancelled('TransactionConflict', 'None'))
      .rejectsOnce(cancelled('None', 'TransactionConflict'))
      .resolves({});
    await store.claimSlots([RECORD]);
    expect(mock.commandCalls(TransactWriteItemsCommand)).toHaveLength(3);
    expect(waits).toEqual([5, 10]);
  });

  it('answers the refusal the attempt after a conflict meets', async () => {
    const { mock, store } = scripted();
    mock
      .on(TransactWriteItemsCommand)
      .rejectsOnce(cancelled('TransactionConflict', 'None'))
      .rejects(cancelled('ConditionalCheckFailed', 'None'));
    // The refused free reads the slot to tell why: it is gone.
    mock.on(GetItemCommand).resolves({});
    await expect(store.claimSlots([RECORD])).rejects.toThrow(ListenerSlotTakenError);
    expect(await store.freeSlot(SLOT, 'a', 2_000)).toBe('not-held');
  });

  it(`gives up after ${MAX_CONFLICT_ATTEMPTS} attempts that all conflict`, async () => {
    const { mock, store, waits } = scripted();
    mock.on(TransactWriteItemsCommand).rejects(cancelled('TransactionConflict', 'None'));
    await expect(store.freeSlot(SLOT, 'a', 2_000)).rejects.toThrow(TransactionCanceledException);
    expect(mock.commandCalls(TransactWriteItemsCommand)).toHaveLength(MAX_CONFLICT_ATTEMPTS);
    expect(waits).toHaveLength(MAX_CONFLICT_ATTEMPTS - 1);
  });

  it('binds a slot whose free was in flight once the free has landed', async () => {
    const { mock, store } = scripted();
    mock
      .on(UpdateItemCommand)
      .rejectsOnce(new TransactionConflictException({ message: 'conflict', $metadata: {} }))
      .resolves({});
    const bound = { target: { ip: '10.0.1.7', port: 7_001 }, boundAt: 2_000, pod: 'gs-a' };
    expect(await store.markBound(SLOT, 'a', bound)).toBe(true);
    expect(mock.commandCalls(UpdateItemCommand)).toHaveLength(2);
  });

  it('sends a transaction cancelled for another reason once, and throws it', async () => {
    const { mock, store } = scripted();
    mock.on(TransactWriteItemsCommand).rejects(cancelled('ValidationError', 'None'));
    await expect(store.claimSlots([RECORD])).rejects.toThrow(TransactionCanceledException);
    expect(mock.commandCalls(TransactWriteItemsCommand)).toHaveLength(1);
  });
});

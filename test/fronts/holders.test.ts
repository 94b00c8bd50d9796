import { describe, expect, it } from 'vitest';
import { frontHoldings, listenerPortHolders } from '../../shared/status/front-holders.js';
import {
  FRONTS_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import { MemorySlotChainStore } from '../../sim/fakes/slot-chain-store.js';

const ID = 'abcdefghijklmnopqrst';
const NLB =
  'arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/games/0123456789abcdef';

async function store() {
  const fronts = new MemoryFrontStore();
  await fronts.claimSlots([
    {
      slot: { loadBalancerArn: NLB, port: 10_500 },
      owner: { allocationId: ID, namespace: 'games', pod: '' },
      portName: 'game',
      protocol: 'UDP',
      claimedAt: 0,
      state: 'claimed',
    },
  ]);
  await fronts.want([
    {
      subnetId: 'subnet-1',
      address: '10.0.1.20',
      port: 8042,
      owner: { allocationId: ID, namespace: 'games', pod: 'gs-1' },
      wantedAt: 0,
    },
  ]);
  return fronts;
}

describe('berth status --holder for fronts', () => {
  it('gives a game server in slots mode the chain of its node seat, and where it stands', async () => {
    const chains = new MemorySlotChainStore();
    const chain = (port: number, hostPort: number, servingAt?: number) => ({
      slot: { loadBalancerArn: NLB, port },
      claimedAt: 0,
      madeAt: 1,
      holder: {
        node: 'node-a',
        address: '10.0.1.20',
        hostPort,
        assignedAt: 1,
        registeredAt: 2,
        ...(servingAt !== undefined ? { servingAt } : {}),
      },
      version: 1,
    });
    await chains.write(undefined, chain(20_001, 8000, 3));
    await chains.write(undefined, chain(20_002, 8001));
    const pod = (hostPorts: Record<string, number>) => ({
      metadata: {
        annotations: {
          'berth.dev/allocation-id': ID,
          [PORTS_ANNOTATION]: JSON.stringify(
            Object.keys(hostPorts).map((name) => ({ name, containerPort: 7777, front: 'nlb' })),
          ),
          [HOST_PORTS_ANNOTATION]: JSON.stringify(hostPorts),
        },
      },
      spec: { nodeName: 'node-a', containers: [] },
    });
    const holdings = await frontHoldings(
      {
        store: new MemoryFrontStore(),
        chains,
        pods: { getPod: async () => pod({ game: 8000, voice: 8001, chat: 8002 }) },
      },
      'games',
      'gs-1',
    );
    expect(holdings.map((h) => [h.kind, h.value, h.front])).toEqual([
      ['nlbListener', 'games:20001', 'serving'],
      ['nlbListener', 'games:20002', 'registering'],
    ]);
  });

  it('gives a game server the addresses it was told, its listener and its destination', async () => {
    const holdings = await frontHoldings(
      {
        store: await store(),
        pods: {
          getPod: async () => ({
            metadata: {
              annotations: {
                'berth.dev/allocation-id': ID,
                [FRONTS_ANNOTATION]: JSON.stringify({ game: 'games-0123.elb.amazonaws.com:10500' }),
              },
            },
          }),
        },
      },
      'games',
      'gs-1',
    );
    expect(holdings.map((h) => [h.kind, h.range, h.value])).toEqual([
      ['publicAddress', 'game', 'games-0123.elb.amazonaws.com:10500'],
      // Claimed before the apiserver named the pod: found by its id.
      ['nlbListener', NLB, 'games:10500'],
      ['acceleratorDestination', 'subnet-1', '10.0.1.20:8042'],
    ]);
  });

  it('finds what the store holds without a cluster, and nothing for another pod', async () => {
    const fronts = await store();
    expect((await frontHoldings({ store: fronts }, 'games', 'gs-1')).map((h) => h.kind)).toEqual([
      'acceleratorDestination',
    ]);
    expect(await frontHoldings({ store: fronts }, 'games', 'gs-2')).toEqual([]);
  });

  it('shows where each front stands: claimed, then serving; wanted, then allowed', async () => {
    const fronts = await store();
    const state = async () =>
      (await frontHoldings({ store: fronts }, 'games', 'gs-1')).map((h) => [h.kind, h.front]);
    expect(await state()).toEqual([['acceleratorDestination', 'wanted']]);
    const slot = { loadBalancerArn: NLB, port: 10_500 };
    const target = { ip: '10.0.1.20', port: 7100 };
    await fronts.markBound(slot, ID, { target, boundAt: 1, pod: 'gs-1' });
    await fronts.markServing(slot, ID, 2);
    await fronts.recordAllowed('subnet-1', '10.0.1.20', [8042]);
    expect(await state()).toEqual([
      ['nlbListener', 'serving'],
      ['acceleratorDestination', 'allowed'],
    ]);
  });

  it('names the holder of a listener port', async () => {
    const [holder] = await listenerPortHolders({ store: await store() }, 10_500);
    expect(holder).toMatchObject({ kind: 'nlbListener', value: 'games:10500', allocationId: ID });
    expect(await listenerPortHolders({ store: await store() }, 10_501)).toEqual([]);
  });
});

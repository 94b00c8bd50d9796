/**
 * A binding in slots mode: a port behind an NLB is told its node seat's chain at once, with no
 * ELB call and no queued work, and never an address the pod carries or a chain on its way out.
 */
import { describe, expect, it } from 'vitest';
import { frontsAtBinding } from '../../../shared/fronts/binding-fronts.js';
import type { SlotChain } from '../../../shared/fronts/slots/store.js';
import type { FrontWork } from '../../../shared/fronts/work.js';
import { MemoryFrontStore } from '../../../sim/fakes/front-store.js';
import { MemorySlotChainStore } from '../../../sim/fakes/slot-chain-store.js';

const NLB = {
  arn: 'arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/games/0123456789abcdef',
  dnsName: 'games-0123456789abcdef.elb.us-east-1.amazonaws.com',
  foreignPorts: new Set<number>(),
};

const seated = (holder: Partial<NonNullable<SlotChain['holder']>> = {}): SlotChain => ({
  slot: { loadBalancerArn: NLB.arn, port: 20_007 },
  claimedAt: 1,
  madeAt: 2,
  targetGroupArn: 'tg-1',
  holder: {
    node: 'node-a',
    address: '10.0.1.20',
    hostPort: 8003,
    assignedAt: 2,
    registeredAt: 3,
    ...holder,
  },
  version: 1,
});

async function bind(chain: SlotChain | undefined, told: Record<string, string> = {}) {
  const chains = new MemorySlotChainStore();
  if (chain) expect(await chains.write(undefined, chain)).toBe(true);
  const queued: FrontWork[] = [];
  const fronts = await frontsAtBinding(
    {
      cluster: 'prod',
      store: new MemoryFrontStore(),
      pool: { members: async () => [NLB] },
      chains,
      queue: { submit: async (work) => void queued.push(work) },
      now: () => 42,
    },
    {
      namespace: 'games',
      pod: 'gs-1',
      allocationId: 'abcdefghijklmnopqrst',
      node: 'node-a',
      nodeAddress: '10.0.1.20',
      ports: [{ name: 'game', front: 'nlb', protocol: 'UDP', hostPort: 8003 }],
      told,
      dryRun: false,
    },
  );
  return { ...fronts, queued };
}

describe('a binding in slots mode', () => {
  it("tells the seat's chain and queues no work", async () => {
    const { addresses, warnings, queued } = await bind(seated());
    expect(Object.fromEntries(addresses)).toEqual({ game: `${NLB.dnsName}:20007` });
    expect(warnings).toEqual([]);
    expect(queued).toEqual([]);
  });

  it('never tells an address the pod carries (a copied manifest), only its seat’s', async () => {
    const { addresses } = await bind(seated(), { game: 'someone-else.example:10001' });
    expect(addresses.get('game')).toBe(`${NLB.dnsName}:20007`);
  });

  it.each([
    ['no chain yet', undefined],
    ['a chain on its way out', seated({ releasingAt: 9 })],
    ['a chain of the node’s earlier address', seated({ address: '10.0.1.99' })],
  ])('tells no address for %s, and says why', async (_case, chain) => {
    const { addresses, warnings } = await bind(chain);
    expect(addresses.size).toBe(0);
    expect(warnings).toEqual([
      'port game: node node-a host port 8003 has no NLB slot yet; the fronts pass writes the address once it serves',
    ]);
  });
});

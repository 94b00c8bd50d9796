/** The slot chains' plan: who lets go, who is seated, what is made, and the first rule. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planSlots, type SlotPlanInput } from '../../../shared/fronts/slots/plan.js';
import type { SlotChain } from '../../../shared/fronts/slots/store.js';

const NLB_A = 'arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/net/a/1';
const NLB_B = 'arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/net/b/2';

const node = (name: string, address: string, ready = true, readySince = 0) => ({
  name,
  address,
  ready,
  readySince,
});

const chain = (port: number, change: Partial<SlotChain> = {}): SlotChain => ({
  slot: { loadBalancerArn: NLB_A, port },
  claimedAt: 0,
  madeAt: 1,
  targetGroupArn: `tg-${port}`,
  version: 2,
  ...change,
});

const held = (node: string, address: string, hostPort: number, registeredAt = 2) => ({
  node,
  address,
  hostPort,
  assignedAt: 1,
  registeredAt,
});

function input(change: Partial<SlotPlanInput>): SlotPlanInput {
  return {
    nodes: [],
    chains: [],
    hostPorts: [8000, 8001],
    heldHostPorts: new Set(),
    pool: [
      { arn: NLB_A, listeners: 0, takenPorts: new Set() },
      { arn: NLB_B, listeners: 0, takenPorts: new Set() },
    ],
    listenerPorts: { base: 10_000, size: 100 },
    placement: 'fill-first',
    random: () => 0,
    spare: 0,
    ...change,
  };
}

describe('planSlots', () => {
  it('claims a new chain for every seat of a new node when none is free', () => {
    const plan = planSlots(input({ nodes: [node('n1', '10.0.1.1')] }));
    expect(plan.create.map((c) => c.seat)).toEqual([
      { node: 'n1', address: '10.0.1.1', hostPort: 8000 },
      { node: 'n1', address: '10.0.1.1', hostPort: 8001 },
    ]);
    expect(new Set(plan.create.map((c) => `${c.slot.loadBalancerArn}#${c.slot.port}`)).size).toBe(
      2,
    );
    expect(plan.assign).toEqual([]);
  });

  it('gives free chains out before it makes any, and seats nothing twice', () => {
    const plan = planSlots(
      input({
        nodes: [node('n1', '10.0.1.1')],
        chains: [chain(10_001), chain(10_002, { holder: held('n1', '10.0.1.1', 8001) })],
      }),
    );
    expect(plan.assign.map((a) => [a.chain.slot.port, a.seat.hostPort])).toEqual([[10_001, 8000]]);
    expect(plan.create).toEqual([]);
  });

  it('keeps spare chains made once every seat has one, counting the free ones', () => {
    const seated = planSlots(
      input({
        nodes: [node('n1', '10.0.1.1')],
        chains: [
          chain(10_001, { holder: held('n1', '10.0.1.1', 8000) }),
          chain(10_002, { holder: held('n1', '10.0.1.1', 8001) }),
          chain(10_003),
        ],
        spare: 3,
      }),
    );
    expect(seated.create.map((c) => c.seat)).toEqual([undefined, undefined]);
    // A seat waiting goes first: no spare while one has no chain.
    const waiting = planSlots(input({ nodes: [node('n1', '10.0.1.1')], spare: 3 }));
    expect(waiting.create.every((c) => c.seat !== undefined)).toBe(true);
  });

  it('lets go of a gone node only once no live pod holds the host port there', () => {
    const chains = [
      chain(10_001, { holder: held('gone', '10.0.1.9', 8000) }),
      chain(10_002, { holder: held('gone', '10.0.1.9', 8001) }),
    ];
    const plan = planSlots(input({ chains, heldHostPorts: new Set(['gone#8001']) }));
    expect(plan.release.map((c) => c.slot.port)).toEqual([10_001]);
  });

  it('lets go of a node that came back with another address, and seats it anew', () => {
    const plan = planSlots(
      input({
        nodes: [node('n1', '10.0.1.2')],
        chains: [chain(10_001, { holder: held('n1', '10.0.1.1', 8000) })],
        hostPorts: [8000],
      }),
    );
    expect(plan.release.map((c) => c.slot.port)).toEqual([10_001]);
    // The released chain serves the new seat once deregistered.
    expect(plan.assign.map((a) => [a.chain.slot.port, a.seat.address])).toEqual([
      [10_001, '10.0.1.2'],
    ]);
  });

  it('finishes what a stopped pass left: unmade, unregistered, releasing', () => {
    const chains = [
      chain(10_001, {
        madeAt: undefined,
        holder: held('n1', '10.0.1.1', 8000, undefined as never),
      }),
      chain(10_002, { holder: { ...held('n1', '10.0.1.1', 8001), registeredAt: undefined } }),
      chain(10_003, { holder: { ...held('x', '10.0.1.5', 8000), releasingAt: 5 } }),
      chain(10_004, { holder: held('n1', '10.0.1.1', 8002) }),
    ];
    const plan = planSlots(
      input({ nodes: [node('n1', '10.0.1.1')], chains, hostPorts: [8000, 8001, 8002] }),
    );
    expect(plan.unfinished.map((c) => c.slot.port).sort()).toEqual([10_001, 10_002, 10_003]);
    expect(plan.create).toEqual([]);
  });

  it('seats Ready nodes first, the longest Ready first, and counts the seats it cannot place', () => {
    const plan = planSlots(
      input({
        nodes: [
          node('late', '10.0.1.3', true, 50),
          node('booting', '10.0.1.4', false),
          node('early', '10.0.1.2', true, 10),
        ],
        hostPorts: [8000],
        pool: [{ arn: NLB_A, listeners: 48, takenPorts: new Set() }],
      }),
    );
    expect(plan.create.map((c) => c.seat?.node)).toEqual(['early', 'late']);
    expect(plan.unseated).toBe(1);
  });

  it('never seats one host port twice, nor puts a chain on a taken listener port', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }),
        fc.array(
          fc.record({
            port: fc.integer({ min: 10_000, max: 10_009 }),
            node: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
            hostPort: fc.constantFrom(8000, 8001),
          }),
          { maxLength: 8 },
        ),
        (nodeIds, given) => {
          const nodes = [...new Set(nodeIds)].map((i) => node(`n${i}`, `10.0.1.${i}`));
          const seen = new Set<string>();
          const chains = given.flatMap((g) => {
            const seat = g.node === undefined ? undefined : `n${g.node}#${g.hostPort}`;
            if (seen.has(String(g.port)) || (seat && seen.has(seat))) return [];
            seen.add(String(g.port));
            if (seat) seen.add(seat);
            return [
              chain(g.port, {
                ...(g.node === undefined
                  ? {}
                  : { holder: held(`n${g.node}`, `10.0.1.${g.node}`, g.hostPort) }),
              }),
            ];
          });
          const plan = planSlots(
            input({
              nodes,
              chains,
              pool: [
                {
                  arn: NLB_A,
                  listeners: chains.length,
                  takenPorts: new Set(chains.map((c) => c.slot.port)),
                },
              ],
              listenerPorts: { base: 10_000, size: 20 },
            }),
          );
          const released = new Set(plan.release.map((c) => c.slot.port));
          const stay = chains.filter((c) => c.holder && !released.has(c.slot.port));
          const seats = [
            ...stay.map((c) => `${c.holder?.node}#${c.holder?.hostPort}`),
            ...plan.assign.map((a) => `${a.seat.node}#${a.seat.hostPort}`),
            ...plan.create.map((c) => `${c.seat?.node}#${c.seat?.hostPort}`),
          ];
          expect(new Set(seats).size).toBe(seats.length);
          for (const c of plan.create) expect(seen.has(String(c.slot.port))).toBe(false);
          // Every assigned chain is free or freed this pass.
          for (const a of plan.assign) {
            expect(a.chain.holder === undefined || released.has(a.chain.slot.port)).toBe(true);
          }
          // Every seat of every node is covered, or counted as unseated.
          expect(
            seats.filter((s) => nodes.some((n) => s.startsWith(`${n.name}#`))).length +
              plan.unseated,
          ).toBe(nodes.length * 2);
        },
      ),
    );
  });
});

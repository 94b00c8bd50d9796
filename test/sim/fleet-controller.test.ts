import { describe, expect, it } from 'vitest';
import {
  type CounterPolicy,
  FleetController,
  type FleetNode,
  type SessionCounter,
} from '../../sim/fleet-controller.js';

/** A game server of these tests: its name, whether it is Allocated, and its Counter. */
interface Server {
  readonly name: string;
  readonly allocated: boolean;
  readonly count: number;
  readonly capacity: number;
}

const server = (name: string, allocated: boolean, count: number, capacity = 4): Server => ({
  name,
  allocated,
  count,
  capacity,
});

const fleetNode = (name: string, ...games: Server[]): FleetNode<Server> => ({
  name,
  games: new Set(games),
});

const counter = (s: Server): SessionCounter => ({ count: s.count, capacity: s.capacity });

const controller = () =>
  new FleetController<Server>(
    { bufferSize: 0, minReplicas: 1, maxReplicas: 100, syncIntervalMs: 0 },
    (s) => s.allocated,
  );

const policy: CounterPolicy = {
  bufferSize: 8,
  minCapacity: 4,
  maxCapacity: 400,
  capacity: 4,
  syncIntervalMs: 0,
};

describe('FleetController: Counter-based allocation (Packed, priority Ascending)', () => {
  it('takes an Allocated server with room before any Ready one, the fullest first', () => {
    const nodes = [
      fleetNode('a', server('a-1', false, 0), server('a-2', false, 0)),
      fleetNode('b', server('b-1', true, 1), server('b-2', true, 3), server('b-3', true, 4)),
    ];
    expect(controller().allocateSession(nodes, counter)?.name).toBe('b-2');
  });

  it('prefers the node with the most Allocated servers over a fuller server elsewhere', () => {
    const nodes = [
      fleetNode('a', server('a-1', true, 3)),
      fleetNode('b', server('b-1', true, 1), server('b-2', true, 4)),
    ];
    expect(controller().allocateSession(nodes, counter)?.name).toBe('b-1');
  });

  it('takes no Allocated server whose session label is closed, falling back to a Ready one', () => {
    const nodes = [
      fleetNode('a', server('a-1', false, 0)),
      fleetNode('b', server('b-1', true, 1), server('b-2', true, 3)),
    ];
    const open = (s: Server) => s.name !== 'b-2';
    expect(controller().allocateSession(nodes, counter, open)?.name).toBe('b-1');
    expect(controller().allocateSession(nodes, counter, () => false)?.name).toBe('a-1');
  });

  it('falls back to a Ready server when no Allocated one has room, and to none when all are full', () => {
    const full = fleetNode('b', server('b-1', true, 4));
    expect(
      controller().allocateSession([full, fleetNode('a', server('a-1', false, 0))], counter)?.name,
    ).toBe('a-1');
    expect(controller().allocateSession([full], counter)).toBeUndefined();
  });
});

describe("FleetController: the FleetAutoscaler's Counter policy", () => {
  it('adds the replicas whose capacity covers what the buffer lacks', () => {
    const fleet = controller();
    // Available: 1 + 0 = 1 of a buffer of 8: ceil(7 / 4) = 2 more.
    fleet.autoscaleCounter(
      0,
      policy,
      [fleetNode('a', server('a-1', true, 3), server('a-2', true, 4))],
      0,
      counter,
    );
    expect(fleet.replicas).toBe(4);
  });

  it('counts game servers not yet placed as the template: empty, at full capacity', () => {
    const fleet = controller();
    fleet.autoscaleCounter(0, policy, [fleetNode('a', server('a-1', true, 4))], 2, counter);
    expect(fleet.replicas).toBe(3);
  });

  it('takes off servers in deletion order only while the buffer stays covered', () => {
    const fleet = controller();
    // Available 4 + 4 + 4 + 2 = 14; the least full node's two empty servers go first: 14 - 4 = 10
    // still covers 8, 10 - 4 = 6 would not.
    fleet.autoscaleCounter(
      0,
      policy,
      [
        fleetNode('a', server('a-1', false, 0), server('a-2', false, 0)),
        fleetNode('b', server('b-1', false, 0), server('b-2', true, 2), server('b-3', true, 4)),
      ],
      0,
      counter,
    );
    expect(fleet.replicas).toBe(4);
  });

  it('stops at the server that brings the room down to the buffer, keeping a full one after it', () => {
    const fleet = controller();
    // Available 4 + 4 + 0 + 4 = 12 of a buffer of 8: a-1 goes (8 left, the buffer); the full
    // b-1 after it would free no room, and Agones stops before it.
    fleet.autoscaleCounter(
      0,
      policy,
      [
        fleetNode('a', server('a-1', false, 0)),
        fleetNode('b', server('b-1', true, 4), server('b-2', false, 0), server('b-3', false, 0)),
      ],
      0,
      counter,
    );
    expect(fleet.replicas).toBe(3);
  });

  it('walks Allocated servers too, so a full one first lowers the replicas without freeing room', () => {
    const fleet = controller();
    // The least full node holds a full Allocated server: it is taken off (room still 12), then
    // a Ready one (room 8): replicas 2 of 4, so the GameServerSet deletes both Ready servers
    // it may, leaving room 4 until the next sync, as Agones' scaleDown does.
    fleet.autoscaleCounter(
      0,
      policy,
      [
        fleetNode('a', server('a-1', true, 4)),
        fleetNode('b', server('b-1', false, 0), server('b-2', false, 0), server('b-3', false, 0)),
      ],
      0,
      counter,
    );
    expect(fleet.replicas).toBe(2);
  });

  it('looks again only once a sync period has begun', () => {
    const fleet = controller();
    const synced = { ...policy, syncIntervalMs: 30_000 };
    // No capacity, below minCapacity 4: Agones adds only what reaches the minimum.
    fleet.autoscaleCounter(0, synced, [], 0, counter);
    expect(fleet.replicas).toBe(1);
    fleet.autoscaleCounter(10_000, synced, [], 5, counter);
    expect(fleet.replicas).toBe(1);
    fleet.autoscaleCounter(30_000, synced, [fleetNode('a', server('a-1', true, 4))], 0, counter);
    expect(fleet.replicas).toBe(3);
  });
});

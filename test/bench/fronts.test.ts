import { describe, expect, it } from 'vitest';
import { berthSystem } from '../../bench/fronts/berth.js';
import {
  type FrontsWorld,
  reachableStats,
  readySignalStats,
  runScenario,
  type SystemFactory,
} from '../../bench/fronts/harness.js';
import { okgSystem } from '../../bench/fronts/okg.js';
import { burstScenario, chaosScenario } from '../../bench/fronts/scenarios.js';
import type {
  FrontsUnderTest,
  GameServer,
  Placement,
  PublishedAddress,
} from '../../bench/fronts/seam.js';
import { judgeFronts } from '../../bench/fronts/targets.js';

/**
 * A careless front system: NLB listener ports from a counter that wraps over five ports (no
 * exclusive claim), listeners never taken down. It breaks both chaos checks on purpose.
 */
class CarelessFronts implements FrontsUnderTest {
  readonly name = 'careless';
  readonly #world: FrontsWorld;
  readonly #published = new Map<string, PublishedAddress>();
  #next = 0;

  constructor(world: FrontsWorld) {
    this.#world = world;
  }

  async created(): Promise<void> {}
  async refused(): Promise<void> {}

  async bound(gs: GameServer, placement: Placement): Promise<void> {
    const lb = this.#world.loadBalancers[1];
    if (!lb || gs.front !== 'nlb') return;
    const port = 20_000 + (this.#next++ % 5);
    const { elbv2 } = this.#world;
    const group = await elbv2.createTargetGroup({
      name: `careless-${gs.name}`,
      protocol: 'UDP',
      port: placement.hostPort,
      vpcId: this.#world.vpcId,
      tags: [{ key: 'owner', value: 'careless' }],
    });
    await elbv2.registerTargets(group.arn, [this.destination(gs, placement)]);
    this.#published.set(gs.name, { host: lb.dnsName, port, at: this.#world.time.now() });
    await elbv2.createListener({
      loadBalancerArn: lb.arn,
      port,
      protocol: 'UDP',
      targetGroupArn: group.arn,
      tags: [{ key: 'owner', value: 'careless' }],
    });
  }

  async started(): Promise<void> {}
  async deleted(): Promise<void> {}
  async gone(): Promise<void> {}

  published(gs: GameServer): PublishedAddress | undefined {
    return this.#published.get(gs.name);
  }

  /** Says ready as soon as it published the address, before the target serves. */
  toldReady(gs: GameServer): number | undefined {
    return this.#published.get(gs.name)?.at;
  }

  destination(_gs: GameServer, placement: Placement) {
    return { ip: placement.nodeAddress, port: placement.hostPort };
  }

  async crash(): Promise<void> {}

  stop(): void {}
}

const careless: SystemFactory = {
  name: 'careless',
  acceleratorPorts: [7000, 7009],
  make: (world) => new CarelessFronts(world),
};

describe('fronts benchmark harness', () => {
  it('measures a small NLB burst through OKG: three mutating calls and a reachable listener per game server', async () => {
    const run = await runScenario(burstScenario('nlb', 10), okgSystem);
    const stats = reachableStats(run, 'nlb');

    expect(stats.gameServers).toBe(10);
    expect(stats.never).toBe(0);
    expect(run.elbv2Calls).toMatchObject({
      CreateTargetGroup: 10,
      CreateListener: 10,
      RegisterTargets: 10,
    });
    expect(run.elbv2MutatingCalls).toBe(30);
    expect(run.doublyHeld).toEqual([]);
    expect(run.orphans).toEqual([]);
  });

  it("counts OKG's custom routing plugin at one Allow per game server at least", async () => {
    const run = await runScenario(burstScenario('accelerator', 10), okgSystem);

    expect(reachableStats(run, 'accelerator').never).toBe(0);
    expect(run.acceleratorMutatingCalls).toBeGreaterThanOrEqual(10);
  });

  it('reaches a small accelerator burst through berth with one Allow for all of it', async () => {
    const run = await runScenario(burstScenario('accelerator', 10), berthSystem);

    expect(reachableStats(run, 'accelerator').never).toBe(0);
    expect(run.acceleratorMutatingCalls).toBe(1);
    // Every one told its front routes, none before players could reach it.
    expect(readySignalStats(run)).toMatchObject({ told: 10, neverTold: 0, toldEarly: 0 });
  });

  it("keeps berth's small chaos run to the first rule and leaves no orphan", async () => {
    const run = await runScenario(chaosScenario(0.2), berthSystem);

    expect(run.doublyHeld).toEqual([]);
    expect(run.orphans).toEqual([]);
    expect(reachableStats(run, 'nlb').gameServers).toBeGreaterThan(0);
  });

  it('catches a system that hands one public port to two live game servers and leaks listeners', async () => {
    const run = await runScenario(chaosScenario(0.2), careless);

    expect(run.doublyHeld.length).toBeGreaterThan(0);
    expect(run.orphans.some((o) => o.startsWith('listener'))).toBe(true);
    expect(readySignalStats(run)?.toldEarly).toBeGreaterThan(0);
    const verdicts = judgeFronts({
      nlbBurst: { berth: run, peer: run },
      acceleratorBurst: { berth: run, peer: run },
      chaos: { berth: run },
      steady: { berth: run },
      slots: { burst: run, churn: run, chaos: run, seats: 16 },
    });
    const chaosVerdicts = verdicts.filter((v) => v.target.startsWith('chaos'));
    expect(chaosVerdicts.map((v) => v.pass)).toEqual([false, false, false, false]);
  });
});

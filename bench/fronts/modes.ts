/**
 * What each NLB mode costs the reference fleet (bench/cost/fleet.ts): its load balancers,
 * listeners and target groups, and the load balancers' monthly hours, so an operator can set a
 * mode's latency beside its price. Per game server, a listener is held while its game server
 * lives; in slots mode, every node holds one per slot of `fronts.nlb.range` for its life, game
 * server or not, so the range is sized to the game servers a node fits. A listener serves one
 * target group (one target), and a Network Load Balancer holds at most 50 listeners (Network Load
 * Balancers User Guide, "Quotas for your Network Load Balancers"); target groups are 3,000 a
 * Region by default, an adjustable quota both modes pass at this size. Pure.
 */
import { MAX_LISTENERS_PER_NLB } from '../../shared/fronts/elbv2.js';
import { MAX_TARGET_GROUPS_PER_REGION } from '../../sim/fakes/elbv2.js';
import { REFERENCE_FLEET } from '../cost/fleet.js';
import { PRICES } from '../cost/prices.js';

/** Hours in the cost benchmark's month (30 days). */
const HOURS_PER_MONTH = 720;

/** One mode's NLB footprint for the reference fleet. */
export interface ModeFootprint {
  readonly mode: 'per-game-server' | 'slots';
  readonly listeners: number;
  readonly loadBalancers: number;
  /** Target groups as a multiple of the Region's default quota. */
  readonly targetGroupQuotas: number;
  readonly monthlyUsd: number;
}

/** The reference fleet's footprint in each mode, every game server behind an NLB. */
export function modeFootprints(): ModeFootprint[] {
  const perNode = Math.ceil(REFERENCE_FLEET.concurrentGameServers / REFERENCE_FLEET.gameNodes);
  const listeners = {
    'per-game-server': REFERENCE_FLEET.concurrentGameServers,
    slots: REFERENCE_FLEET.gameNodes * perNode,
  } as const;
  return (['per-game-server', 'slots'] as const).map((mode) => {
    const loadBalancers = Math.ceil(listeners[mode] / MAX_LISTENERS_PER_NLB);
    return {
      mode,
      listeners: listeners[mode],
      loadBalancers,
      targetGroupQuotas: Math.round((listeners[mode] / MAX_TARGET_GROUPS_PER_REGION) * 10) / 10,
      monthlyUsd: Math.round(loadBalancers * PRICES.nlbHour.usd * HOURS_PER_MONTH * 100) / 100,
    };
  });
}

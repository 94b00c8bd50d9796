/**
 * Scale and repair pass metering: each pass at the world's size through its function's body
 * (`scaleInvocation`, `repairInvocation`), over the reference cluster's wiring.
 */
import { clusterCapacityReader } from '../../../shared/app/capacity.js';
import { observability } from '../../../shared/app/observability.js';
import { repairInvocation, repairPasses } from '../../../shared/app/repair-pass.js';
import { scaleInvocation, scaleRunner } from '../../../shared/app/scale-pass.js';
import { ClusterSet } from '../../../shared/clusters/cluster-set.js';
import { FakeNodePool } from '../../../sim/fakes/node-pool.js';
import { passFunction } from './lambda.js';
import type { Session } from './session.js';
import { passContextOf } from './world.js';

/** Passes measured at fleet size, each kind. */
export const PASS_SAMPLES = 3;

/**
 * The scale and repair passes at the world's size, through their functions' bodies; answers how
 * many actions the scale passes took.
 */
export async function meterPasses(session: Session): Promise<{ readonly scaleActions: number }> {
  const { world, log } = session;
  const { config } = world;
  log(
    `  metering ${PASS_SAMPLES} scheduled and ${PASS_SAMPLES} triggered scale passes and ${PASS_SAMPLES} repair passes...`,
  );
  const context = passContextOf(world, Date.now);

  const scaleObs = observability('scale');
  // The node pool is the one part faked: the stack's is an EKS managed node group.
  const pool = new FakeNodePool(world.nodes.length);
  const scale = passFunction(
    'scale',
    scaleObs,
    scaleInvocation(
      new ClusterSet([config], () => scaleRunner(context, { nodePool: pool })),
      scaleObs,
      // As the scale function does: the cluster's capacity view after each pass.
      new ClusterSet([config], () => clusterCapacityReader(context)),
    ),
  );
  let scaleActions = 0;
  // The scheduled passes, then those an admission asks for (scale-up only, same listing).
  const kinds = [
    ['scale-pass', {}],
    ['scale-pass-triggered', { triggered: true }],
  ] as const;
  for (const [kind, input] of kinds) {
    for (let pass = 1; pass <= PASS_SAMPLES; pass++) {
      const { value, sample } = await session.invoke('scale', (ctx) => scale(input, ctx));
      scaleActions += value.actions.length;
      const byType: Record<string, number> = {};
      for (const action of value.actions) byType[action.type] = (byType[action.type] ?? 0) + 1;
      const actions = Object.entries(byType).map(([type, n]) => `${type} ${n}`);
      session.recordPass(
        kind,
        pass,
        sample,
        `${value.actions.length} actions (${actions.join(', ') || 'none'}), ${value.failures} failures`,
      );
    }
  }

  const repairObs = observability('repair');
  const repair = passFunction(
    'repair',
    repairObs,
    repairInvocation(new ClusterSet([config], () => repairPasses(context)), repairObs),
  );
  for (let pass = 1; pass <= PASS_SAMPLES; pass++) {
    const { value, sample } = await session.invoke('repair', (ctx) => repair({}, ctx));
    session.recordPass(
      'repair-pass',
      pass,
      sample,
      `findings ${JSON.stringify(value.findings)}, released ${value.released}, recorded ${value.recorded}`,
    );
  }
  return { scaleActions };
}

/**
 * Scale and repair pass metering: each pass at fleet size through a body that mirrors its
 * handler's, around the same shared wiring and Powertools calls.
 */
import type { Context } from 'aws-lambda';
import { observability } from '../../../shared/app/observability.js';
import { passLease, storeOptions } from '../../../shared/app/pass-context.js';
import { recordRepairPass, recordScalePass } from '../../../shared/app/pass-records.js';
import { exclusiveUsage, repairRunner } from '../../../shared/app/repair-pass.js';
import { runScalePass } from '../../../shared/scale/pass.js';
import { DynamoScaleMemory } from '../../../shared/store/dynamo-scale-memory.js';
import { FakeNodePool } from '../../../test/scale/fakes.js';
import { passFunction } from './lambda.js';
import type { Session } from './session.js';
import { passContextOf } from './world.js';

/** Passes measured at fleet size, each kind. */
export const PASS_SAMPLES = 3;

/** The scale and repair passes at fleet size, through their handlers' bodies. */
export async function meterPasses(session: Session): Promise<void> {
  const { world, log } = session;
  const { config, cluster } = world;
  log(`  metering ${PASS_SAMPLES} scale passes and ${PASS_SAMPLES} repair passes...`);
  const context = passContextOf(world, Date.now);

  const scaleObs = observability('scale');
  scaleObs.forCluster(config.cluster);
  // The node pool is the one part faked: the stack's is an EKS managed node group.
  const pool = new FakeNodePool(world.nodes.length);
  const lease = passLease(context);
  const memory = new DynamoScaleMemory(storeOptions(context));
  const scale = passFunction('scale', scaleObs, async (_event: unknown, ctx: Context) => {
    // The body of functions/scale/handler.ts, with the same records.
    const report = await runScalePass(
      { cluster, pool, lease, now: Date.now, holder: ctx.awsRequestId, memory },
      config.scale,
      { dryRun: false },
    );
    recordScalePass(scaleObs, report);
    const byType: Record<string, number> = {};
    for (const action of report.actions) byType[action.type] = (byType[action.type] ?? 0) + 1;
    const actions = Object.entries(byType).map(([type, n]) => `${type} ${n}`);
    return `${report.actions.length} actions (${actions.join(', ') || 'none'}), ${report.failures.length} failures`;
  });
  for (let pass = 1; pass <= PASS_SAMPLES; pass++) {
    const { value, sample } = await session.invoke('scale', (ctx) => scale({}, ctx));
    session.recordPass('scale-pass', pass, sample, value);
  }

  const repairObs = observability('repair');
  repairObs.forCluster(config.cluster);
  const runRepair = repairRunner(context);
  const usage = exclusiveUsage(context);
  const repair = passFunction('repair', repairObs, async (_event: unknown, ctx: Context) => {
    // The body of functions/repair/handler.ts, with the same records.
    const summary = await runRepair(ctx.awsRequestId);
    recordRepairPass(repairObs, summary, await usage());
    return `findings ${JSON.stringify(summary.findings)}, released ${summary.released}, recorded ${summary.recorded}${summary.skipped ? `, skipped: ${summary.skipped}` : ''}`;
  });
  for (let pass = 1; pass <= PASS_SAMPLES; pass++) {
    const { value, sample } = await session.invoke('repair', (ctx) => repair({}, ctx));
    session.recordPass('repair-pass', pass, sample, value);
  }
}

/**
 * Every pass at once, for the processes that run them all (`berth serve`, the CLI). A Lambda
 * wires only its own pass from `scale-pass.ts`, `repair-pass.ts` or `eni-pass.ts`.
 */
import { type Ec2Account, type EniRunner, eniRunner } from './eni-pass.js';
import type { PassContext } from './pass-context.js';
import { type RepairRunner, repairRunner } from './repair-pass.js';
import { type ScaleRunner, scaleRunner } from './scale-pass.js';

/** The passes, ready to run. */
export interface Passes {
  readonly scale: ScaleRunner;
  readonly repair: RepairRunner;
  readonly eni: EniRunner;
}

/** Wires every pass for one cluster; `account` is EC2 as the process's other clusters reach it. */
export function createPasses(context: PassContext, account?: Ec2Account): Passes {
  return {
    scale: scaleRunner(context),
    repair: repairRunner(context),
    eni: eniRunner(context, account),
  };
}

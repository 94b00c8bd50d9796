/**
 * Which passes `berth serve --passes` runs on timers for one cluster, which it leaves off and
 * why, and which of those it runs call AWS: only those need a Region, so the passes run against
 * kind or minikube once the ENI pass is off (`eni.intervalSeconds: 0`) and nothing else calls AWS.
 */
import type { BerthConfig } from '../config/schema.js';
import { hasFronts } from '../fronts/front-spec.js';

/** One pass of the local server, as its timers run it (or not). */
export interface PlannedPass {
  readonly name: 'repair' | 'scale' | 'ENI' | 'fronts';
  /** Why its timer is off; undefined when it runs. */
  readonly off?: string;
  /** What of AWS a running pass calls; undefined when it calls nothing there. */
  readonly aws?: string;
}

/** How often `--passes` runs the fronts pass, as the stack's schedule does. */
export const FRONTS_PASS_SECONDS = 60;

/** A pass's timer: locally, an interval of 0 turns the pass off. */
const timer = (key: string, seconds: number) =>
  seconds > 0 ? {} : { off: `${key}.intervalSeconds is 0` };

/**
 * The passes of `config` in the order the banner lists them. Node pools `none`, `kubernetes`,
 * `karpenter` and `auto-mode` act through the Kubernetes API only (Karpenter terminates the
 * instance of a deleted Node itself); `asg` and `eks-nodegroup` call Auto Scaling and EKS.
 */
export function plannedPasses(config: BerthConfig): readonly PlannedPass[] {
  const pool = config.scale.nodePool;
  const scaleAws =
    pool.type === 'asg'
      ? `Auto Scaling (node pool asg ${pool.name})`
      : pool.type === 'eks-nodegroup'
        ? `EKS and Auto Scaling (node pool eks-nodegroup ${pool.name})`
        : undefined;
  const passes: PlannedPass[] = [
    { name: 'repair', ...timer('repair', config.repair.intervalSeconds) },
    {
      name: 'scale',
      ...timer('scale', config.scale.intervalSeconds),
      ...(scaleAws ? { aws: scaleAws } : {}),
    },
    { name: 'ENI', ...timer('eni', config.eni.intervalSeconds), aws: 'EC2' },
  ];
  if (hasFronts(config))
    passes.push({ name: 'fronts', aws: 'Elastic Load Balancing and Global Accelerator' });
  return passes;
}

/** The running passes that call AWS, each with what it calls. */
export function passesCallingAws(passes: readonly PlannedPass[]): readonly PlannedPass[] {
  return passes.filter((pass) => pass.off === undefined && pass.aws !== undefined);
}

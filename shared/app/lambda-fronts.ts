/**
 * The fronts function's body, apart from the fronts wiring the admission function also builds:
 * the Lambda's pass contexts read the cluster through the EKS client (`@kubernetes/client-node`),
 * which the admission function never loads.
 */
import { lambdaSettings } from '../config/load.js';
import { frontsInvocation, frontsRunner, lambdaFrontQueue, sdkFrontsAccount } from './fronts.js';
import { lambdaPassContexts } from './lambda.js';
import type { Observability } from './observability.js';

/**
 * The fronts function as the stack deploys it (functions/fronts/handler.ts): every cluster of
 * the Lambda environment, ELBv2 and Global Accelerator through the SDK, binds on the SQS queue.
 */
export function lambdaFrontsInvocation(
  observe: Observability,
): (event: unknown) => Promise<unknown> {
  const settings = lambdaSettings();
  const account = sdkFrontsAccount(settings.region);
  const queue = lambdaFrontQueue(settings);
  return frontsInvocation(
    lambdaPassContexts(settings).map((context) => frontsRunner(context, { account, queue })),
    observe,
  );
}

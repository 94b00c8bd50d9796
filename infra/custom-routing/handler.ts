/**
 * The Lambda entry points of the accelerator provider (infra/constructs/custom-routing-accelerator.ts):
 * `onEvent` and `isComplete`, each bundled as its own function with the same file.
 */
import { GlobalAcceleratorClient } from '@aws-sdk/client-global-accelerator';
import {
  type AcceleratorEvent,
  isComplete as completeStep,
  onEvent as eventStep,
  GLOBAL_ACCELERATOR_REGION,
} from './lifecycle.js';

const client = new GlobalAcceleratorClient({ region: GLOBAL_ACCELERATOR_REGION });

/** The provider framework's `onEvent` handler. */
export const onEvent = (event: AcceleratorEvent) => eventStep(client, event);

/** The provider framework's `isComplete` handler. */
export const isComplete = (event: AcceleratorEvent & { PhysicalResourceId: string }) =>
  completeStep(client, event);

/**
 * How the admission function asks for a triggered scale pass in AWS: an asynchronous invoke of
 * the scale function (Lambda queues the event and answers at once), with the event a schedule
 * sends plus `triggered`. The store's claim (shared/scale/admission-trigger.ts) has already made
 * this the one ask of its cluster within the debounce.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { LambdaSettings } from '../config/load.js';
import type { PassInput } from './pass-input.js';

/** What a triggered scale invocation is sent (functions/scale/handler.ts reads it). */
export interface TriggeredScaleEvent extends PassInput {
  readonly triggered: true;
}

/**
 * Asks the scale function for a triggered pass of `cluster` (named in the event where the stack
 * serves several, as the schedules name it).
 */
export function lambdaScaleAsk(
  client: LambdaClient,
  functionName: string,
  cluster: string | undefined,
): () => Promise<void> {
  const event: TriggeredScaleEvent = {
    ...(cluster === undefined ? {} : { cluster }),
    triggered: true,
  };
  const payload = new TextEncoder().encode(JSON.stringify(event));
  return async () => {
    await client.send(
      new InvokeCommand({ FunctionName: functionName, InvocationType: 'Event', Payload: payload }),
    );
  };
}

/**
 * The admission function's asks, aimed at the scale function its environment names
 * (BERTH_SCALE_FUNCTION), one per cluster over one Lambda client; undefined where the stack
 * names none, and admissions then count nothing.
 */
export function lambdaScaleAsks(
  settings: Pick<LambdaSettings, 'region' | 'scaleFunctionName'>,
): ((cluster: string | undefined) => () => Promise<void>) | undefined {
  const functionName = settings.scaleFunctionName;
  if (!functionName) return undefined;
  const client = new LambdaClient({ region: settings.region });
  return (cluster) => lambdaScaleAsk(client, functionName, cluster);
}

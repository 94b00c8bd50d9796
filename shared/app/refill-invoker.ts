/**
 * Background refills in AWS: the node IP function hands a `refill-pool` event to the ENI function
 * with an asynchronous invoke (Lambda queues it and answers at once), so the assign that asked
 * returns without waiting for EC2. The ENI function runs the refill under the pool's lease.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { ConfigError } from '../config/errors.js';
import type { LambdaSettings } from '../config/load.js';
import type { RefillRequests } from '../eni/refill.js';
import type { RefillPoolEvent } from './eni-pass.js';

/** Hands refill requests to the ENI function; a refused hand-over is logged, never thrown. */
export class LambdaRefillInvoker implements RefillRequests {
  readonly #client: LambdaClient;
  readonly #functionName: string;
  readonly #cluster: string | undefined;
  readonly #onError: (node: string, error: unknown) => void;

  constructor(options: {
    readonly client: LambdaClient;
    readonly functionName: string;
    /** The cluster of the nodes it asks for, named in each event the ENI function gets. */
    readonly cluster?: string;
    readonly onError: (node: string, error: unknown) => void;
  }) {
    this.#client = options.client;
    this.#functionName = options.functionName;
    this.#cluster = options.cluster;
    this.#onError = options.onError;
  }

  async request(node: string): Promise<void> {
    const event: RefillPoolEvent = {
      kind: 'refill-pool',
      ...(this.#cluster === undefined ? {} : { cluster: this.#cluster }),
      node,
    };
    try {
      await this.#client.send(
        new InvokeCommand({
          FunctionName: this.#functionName,
          InvocationType: 'Event',
          Payload: new TextEncoder().encode(JSON.stringify(event)),
        }),
      );
    } catch (error) {
      // The pass and the on-demand refill still grow the pool; only the head start is lost.
      this.#onError(node, error);
    }
  }
}

/**
 * The node IP function's invokers, aimed at the ENI function its environment names: one per
 * cluster (named in its events where the stack serves several), all over one Lambda client.
 */
export function refillInvokers(
  settings: LambdaSettings,
  onError: (node: string, error: unknown) => void,
): (cluster: string | undefined) => LambdaRefillInvoker {
  const functionName = settings.eniFunctionName;
  if (!functionName) {
    throw new ConfigError(['BERTH_ENI_FUNCTION: environment variable is not set']);
  }
  const client = new LambdaClient({ region: settings.region });
  return (cluster) =>
    new LambdaRefillInvoker({
      client,
      functionName,
      ...(cluster === undefined ? {} : { cluster }),
      onError,
    });
}

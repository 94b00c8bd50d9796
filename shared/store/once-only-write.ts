/**
 * Sending a non-idempotent write at most once. The SDK retries a request that failed with a 5xx
 * or lost its connection, yet DynamoDB may have applied it before the failure: for an `ADD` to a
 * number, "the updates are not idempotent ... This would risk updating the counter twice"
 * (Amazon DynamoDB Developer Guide, "Working with items and attributes", Atomic counters). A
 * conditional write's retry fails its own condition and is read back, but a decrement taken twice
 * gives away a use a live pod holds. Such a command goes out once past the point where it may
 * have landed: a refusal DynamoDB answered (a 4xx, throttling among them) still reaches the SDK's
 * retries unchanged, since it applied nothing; any other failure becomes
 * `WriteOutcomeUnknownError`, which the SDK does not retry (it carries no status, code or cause
 * the retry strategy classifies as transient).
 */
import type { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { MetadataBearer } from '@smithy/types';
import { WriteOutcomeUnknownError } from './errors.js';

/** `command`, sent at most once past the point where it may have landed; `what` names it. */
export function onceOnly(command: UpdateItemCommand, what: string): UpdateItemCommand {
  // In the deserialize step, inside the retry middleware (finalizeRequest): what it throws is
  // what the retry strategy classifies.
  command.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (refused(error)) throw error;
        throw new WriteOutcomeUnknownError(what, error);
      }
    },
    { step: 'deserialize', name: 'berthOnceOnly', priority: 'high' },
  );
  return command;
}

/** Whether DynamoDB answered the request with a refusal (4xx): then nothing was applied. */
function refused(error: unknown): boolean {
  const status = (error as Partial<MetadataBearer>)?.$metadata?.httpStatusCode;
  return status !== undefined && status >= 400 && status < 500;
}

/**
 * Round trips on an operation's critical path: the DynamoDB requests it waits for one after
 * another. Requests that go out together (a record and a claim written at once) count as one
 * round trip; a read, then a write that needs it, count as two. Measured, not counted by hand:
 * a middleware on the client sees every request the operation's code path sends, retries
 * included, and an AsyncLocalStorage keeps concurrent operations apart.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

interface Trace {
  inFlight: number;
  roundTrips: number;
}

const traces = new AsyncLocalStorage<Trace>();
const counted = new WeakSet<DynamoDBClient>();

/** Makes `client` count the round trips of operations run under `withRoundTrips`. */
export function countRoundTrips(client: DynamoDBClient): void {
  if (counted.has(client)) return;
  counted.add(client);
  client.middlewareStack.add(
    (next) => async (args) => {
      const trace = traces.getStore();
      if (!trace) return next(args);
      // A request that starts while none of the operation's is in flight starts a new trip.
      if (trace.inFlight === 0) trace.roundTrips++;
      trace.inFlight++;
      try {
        return await next(args);
      } finally {
        trace.inFlight--;
      }
    },
    { step: 'initialize', name: 'berthRoundTrips' },
  );
}

/** Runs `operation`, answering its result and the round trips it waited for. */
export async function withRoundTrips<T>(
  operation: () => Promise<T>,
): Promise<{ readonly value: T; readonly roundTrips: number }> {
  const trace: Trace = { inFlight: 0, roundTrips: 0 };
  const value = await traces.run(trace, operation);
  return { value, roundTrips: trace.roundTrips };
}

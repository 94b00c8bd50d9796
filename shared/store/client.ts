/**
 * DynamoDB clients. A local endpoint (DynamoDB Local) gets fixed dummy credentials, so the local
 * stack never reads, or needs, real AWS credentials. Every client stamps, guards and checks the
 * items' schema version (./versioned-client.ts).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { versioned } from './versioned-client.js';

/** Where to reach DynamoDB: a local endpoint, or the default AWS one for the region. */
export interface DynamoTarget {
  readonly endpoint?: string;
  readonly region?: string;
  /**
   * A command a person waits on: every request is bounded (`COMMAND_TIMEOUTS_MS`), as it always
   * is with an `endpoint`. Without it (the Lambda functions) only the function's own timeout
   * bounds a request.
   */
  readonly command?: boolean;
  /** Attempts per request; the SDK's standard mode (3, jittered backoff) when absent. */
  readonly maxAttempts?: number;
  /** Sockets the client keeps open to the endpoint; the SDK's 50 when absent. */
  readonly maxSockets?: number;
}

/**
 * How long an endpoint may keep a command waiting before its request fails: to connect, and for
 * the first byte of an answer, per attempt. An endpoint that accepts connections but never
 * answers must end a command with its error, not hang it; DynamoDB answers in milliseconds and
 * DynamoDB Local on a busy machine within seconds. The connection limit counts a request's wait
 * for one of the client's sockets too, so it is as long as the answer's: many requests at once
 * to a loaded DynamoDB Local queue for sockets for seconds (3 s failed them). A command's first request is one attempt
 * (`openStore`'s probe), so a silent endpoint ends it in about 10 s; a request that times out
 * later, in the middle of a command, ends it after its three attempts, within about 40 s.
 *
 * The Lambda functions keep the SDK's defaults (no per-request limit): a request under load,
 * throttled and retried with backoff, may take seconds, and each function's own timeout (the
 * admission function's 4 s, under the webhook's 5 s; a leased pass's, 30 s under its lease)
 * already ends an invocation that waits too long, with the error its caller handles.
 */
export const COMMAND_TIMEOUTS_MS = { connectionTimeout: 10_000, requestTimeout: 10_000 } as const;

/** A client for the target. */
export function dynamoClient(target: DynamoTarget): DynamoDBClient {
  const bounded = Boolean(target.endpoint) || target.command === true;
  return versioned(
    new DynamoDBClient({
      ...(bounded
        ? // throwOnRequestTimeout: without it the handler only warns, and the request waits on.
          {
            requestHandler: {
              ...COMMAND_TIMEOUTS_MS,
              throwOnRequestTimeout: true,
              ...(target.maxSockets ? { httpAgent: { maxSockets: target.maxSockets } } : {}),
            },
          }
        : {}),
      ...(target.maxAttempts === undefined ? {} : { maxAttempts: target.maxAttempts }),
      ...(target.endpoint
        ? {
            endpoint: target.endpoint,
            region: target.region ?? 'local',
            credentials: { accessKeyId: 'berth', secretAccessKey: 'berth-local' },
          }
        : target.region
          ? { region: target.region }
          : {}),
    }),
  );
}

/**
 * DynamoDB clients. A local endpoint (DynamoDB Local) gets fixed dummy credentials, so the local
 * stack never reads, or needs, real AWS credentials.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Where to reach DynamoDB: a local endpoint, or the default AWS one for the region. */
export interface DynamoTarget {
  readonly endpoint?: string;
  readonly region?: string;
}

/**
 * How long a given endpoint may keep a connection waiting (to connect, and between bytes of an
 * answer) before the request fails: an endpoint that accepts connections but never answers must
 * end a command with its error, not hang it. DynamoDB Local on a busy machine answers within
 * seconds.
 */
export const ENDPOINT_TIMEOUTS_MS = { connectionTimeout: 5_000, requestTimeout: 10_000 } as const;

/** A client for the target; retries are the SDK's standard mode (3 attempts, jittered backoff). */
export function dynamoClient(target: DynamoTarget): DynamoDBClient {
  if (target.endpoint) {
    return new DynamoDBClient({
      // throwOnRequestTimeout: without it the handler only warns, and the request waits on.
      requestHandler: { ...ENDPOINT_TIMEOUTS_MS, throwOnRequestTimeout: true },
      endpoint: target.endpoint,
      region: target.region ?? 'local',
      credentials: { accessKeyId: 'berth', secretAccessKey: 'berth-local' },
    });
  }
  return new DynamoDBClient(target.region ? { region: target.region } : {});
}

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

/** A client for the target; retries are the SDK's standard mode (3 attempts, jittered backoff). */
export function dynamoClient(target: DynamoTarget): DynamoDBClient {
  if (target.endpoint) {
    return new DynamoDBClient({
      endpoint: target.endpoint,
      region: target.region ?? 'local',
      credentials: { accessKeyId: 'berth', secretAccessKey: 'berth-local' },
    });
  }
  return new DynamoDBClient(target.region ? { region: target.region } : {});
}

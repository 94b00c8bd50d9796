/**
 * A berth function's Lambda environment for a handler test: the variables the stack sets, over
 * the run's DynamoDB Local, for a stack of `clusters`; `restore` puts the process environment
 * back as it was.
 */
import { inject } from 'vitest';

/** Sets the environment; answers how to put it back. */
export function lambdaEnvironment(
  tableName: string,
  clusters: readonly string[],
  extra: Readonly<Record<string, string>> = {},
): { restore: () => void } {
  const saved = { ...process.env };
  Object.assign(process.env, {
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'berth',
    AWS_SECRET_ACCESS_KEY: 'berth-local',
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    BERTH_TABLE: tableName,
    BERTH_CONFIG: JSON.stringify({
      clusters: Object.fromEntries(clusters.map((cluster) => [cluster, {}])),
    }),
    BERTH_SETTLE_QUEUE: 'https://sqs.eu-west-1.amazonaws.com/111122223333/berth-settle',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
    ...extra,
  });
  return {
    restore() {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    },
  };
}

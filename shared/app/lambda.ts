/**
 * Composition for the Lambda functions: settings from the environment, AWS clients created once
 * per container (module scope of each function), Kubernetes access through an EKS token made
 * from the function's own role.
 */

import { EKSClient } from '@aws-sdk/client-eks';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { type LambdaSettings, lambdaSettings } from '../config/load.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { ProvidedClusterApi } from '../k8s/cluster-api-provider.js';
import { EksClusterApiFactory, SdkEksClusterLookup } from '../k8s/eks-cluster-api.js';
import { dynamoClient } from '../store/client.js';
import { createPasses, type Passes } from './passes.js';
import { type BerthRuntime, createRuntime } from './runtime.js';

/** A runtime for a Lambda function, with the settings it was built from. */
export interface LambdaRuntime {
  readonly settings: LambdaSettings;
  readonly runtime: BerthRuntime;
  readonly clusterApi: ClusterApi;
}

/** Kubernetes access for the configured EKS cluster (`cluster` in the config is its name). */
export function eksClusterApi(settings: LambdaSettings): ClusterApi {
  const eks = new EKSClient({ region: settings.region });
  return new ProvidedClusterApi(
    new EksClusterApiFactory({
      cluster: settings.config.cluster,
      region: settings.region,
      // The EKS client's own provider chain: the function's role, refreshed by the SDK.
      credentials: eks.config.credentials,
      lookup: new SdkEksClusterLookup(eks),
      now: Date.now,
    }),
  );
}

/** Builds the runtime from the Lambda environment. */
export function lambdaRuntime(): LambdaRuntime {
  const settings = lambdaSettings();
  const clusterApi = eksClusterApi(settings);
  const runtime = createRuntime({
    config: settings.config,
    dynamo: dynamoClient({ region: settings.region }),
    tableName: settings.tableName,
    clusterApi,
  });
  return { settings, runtime, clusterApi };
}

/** The webhook path secret, read once per container from Secrets Manager. */
export async function webhookSecret(settings: LambdaSettings): Promise<string> {
  if (!settings.webhookSecretArn)
    throw new Error('BERTH_WEBHOOK_SECRET_ARN is not set for the admission function');
  const client = new SecretsManagerClient({ region: settings.region });
  const out = await client.send(new GetSecretValueCommand({ SecretId: settings.webhookSecretArn }));
  client.destroy();
  if (!out.SecretString) throw new Error(`secret ${settings.webhookSecretArn} has no string value`);
  return out.SecretString;
}

/** The scheduled passes for a Lambda function, from the Lambda environment. */
export function lambdaPasses(): { readonly settings: LambdaSettings; readonly passes: Passes } {
  const settings = lambdaSettings();
  const passes = createPasses({
    config: settings.config,
    dynamo: dynamoClient({ region: settings.region }),
    tableName: settings.tableName,
    clusterApi: eksClusterApi(settings),
  });
  return { settings, passes };
}

/**
 * Composition for the pass functions: settings from the environment, clients created once per
 * container (module scope of each function), Kubernetes through an EKS token made from the
 * function's own role.
 */
import { EKSClient } from '@aws-sdk/client-eks';
import { type LambdaSettings, lambdaSettings } from '../config/load.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { ProvidedClusterApi } from '../k8s/cluster-api-provider.js';
import { EksClusterApiFactory, SdkEksClusterLookup } from '../k8s/eks-cluster-api.js';
import { dynamoClient } from '../store/client.js';
import type { PassContext } from './pass-context.js';

/** Kubernetes access for the configured EKS cluster (`cluster` in the config is its name). */
function eksClusterApi(settings: LambdaSettings): ClusterApi {
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

/** What a pass function builds its pass from, read from the Lambda environment. */
export function lambdaPassContext(settings: LambdaSettings = lambdaSettings()): PassContext {
  return {
    config: settings.config,
    dynamo: dynamoClient({ region: settings.region }),
    tableName: settings.tableName,
    clusterApi: eksClusterApi(settings),
    region: settings.region,
  };
}

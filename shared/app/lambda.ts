/**
 * Composition for the scheduled-pass Lambda functions (repair, scale, ENI): settings from the
 * environment, AWS clients created once per container (module scope of each function), Kubernetes
 * access through client-node with an EKS token made from the function's own role. The admission
 * function has its own, client-node-free composition: ./lambda-admission.ts.
 */

import { EKSClient } from '@aws-sdk/client-eks';
import { type LambdaSettings, lambdaSettings } from '../config/load.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { ProvidedClusterApi } from '../k8s/cluster-api-provider.js';
import { EksClusterApiFactory, SdkEksClusterLookup } from '../k8s/eks-cluster-api.js';
import { dynamoClient } from '../store/client.js';
import { createPasses, type Passes } from './passes.js';

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

/** The scheduled passes for a Lambda function, from the Lambda environment. */
export function lambdaPasses(): { readonly settings: LambdaSettings; readonly passes: Passes } {
  const settings = lambdaSettings();
  const passes = createPasses({
    config: settings.config,
    dynamo: dynamoClient({ region: settings.region }),
    tableName: settings.tableName,
    clusterApi: eksClusterApi(settings),
    region: settings.region,
  });
  return { settings, passes };
}

/**
 * Composition for the pass functions: settings from the environment, the DynamoDB and EKS clients
 * created once per container (module scope of each function) and shared by every cluster served,
 * Kubernetes through an EKS token made from the function's own role for each cluster. What a
 * cluster's pass builds on top is built once per cluster, on its first event; EC2 and the ENI
 * function's invoker, account-wide, are the container's (`sdkEc2Account`, `refillInvokers`).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EKSClient } from '@aws-sdk/client-eks';
import { ClusterSet } from '../clusters/cluster-set.js';
import { type LambdaSettings, lambdaSettings } from '../config/load.js';
import type { BerthConfig } from '../config/schema.js';
import { ProvidedClusterApi } from '../k8s/cluster-api-provider.js';
import { EksClusterApiFactory, SdkEksClusterLookup } from '../k8s/eks-cluster-api.js';
import { dynamoClient } from '../store/client.js';
import type { PassContext } from './pass-context.js';

/** Clients every cluster's pass shares: one connection pool each, whatever the clusters. */
interface SharedClients {
  readonly dynamo: DynamoDBClient;
  readonly eks: EKSClient;
}

/** One cluster's pass context; `cluster` in the config is the EKS cluster's name. */
function passContext(
  settings: LambdaSettings,
  clients: SharedClients,
  config: BerthConfig,
): PassContext {
  return {
    config,
    dynamo: clients.dynamo,
    tableName: settings.tableName,
    clusterApi: new ProvidedClusterApi(
      new EksClusterApiFactory({
        cluster: config.cluster,
        region: settings.region,
        // The EKS client's own provider chain: the function's role, refreshed by the SDK.
        credentials: clients.eks.config.credentials,
        lookup: new SdkEksClusterLookup(clients.eks),
        now: Date.now,
      }),
    ),
    region: settings.region,
  };
}

/** What a pass function builds its pass from for each cluster it serves, read from the Lambda environment. */
export function lambdaPassContexts(
  settings: LambdaSettings = lambdaSettings(),
): ClusterSet<PassContext> {
  const clients: SharedClients = {
    dynamo: dynamoClient({ region: settings.region }),
    eks: new EKSClient({ region: settings.region }),
  };
  return new ClusterSet(settings.configs, (config) => passContext(settings, clients, config));
}

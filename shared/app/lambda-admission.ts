/**
 * Composition for the admission function alone. It is kept apart from ./lambda.ts, whose passes
 * need `@kubernetes/client-node`: the webhook only reads a pod and a node, so it reaches the
 * cluster through the small HTTPS reader and its bundle carries no Kubernetes client (cold start
 * and bundle size). Clients are created once per container, at the handler's module scope.
 */
import { EKSClient } from '@aws-sdk/client-eks';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { type LambdaSettings, lambdaSettings } from '../config/load.js';
import { EksCredentials, SdkEksClusterLookup } from '../k8s/eks-credentials.js';
import { HttpsClusterReader } from '../k8s/https-node-reader.js';
import { QueueSettler } from '../settle/settler.js';
import type { SettleTask } from '../settle/task.js';
import { dynamoClient } from '../store/client.js';
import { lambdaSettleQueue } from './lambda-settle.js';
import { type BerthRuntime, createRuntime } from './runtime.js';

/** The admission runtime, with the settings it was built from. */
export interface LambdaAdmissionRuntime {
  readonly settings: LambdaSettings;
  readonly runtime: BerthRuntime;
}

/**
 * EKS access for the configured cluster (`cluster` in the config is its name): DescribeCluster
 * once, a bearer token from the function's role renewed before EKS stops honouring it.
 */
function eksCredentials(settings: LambdaSettings): EksCredentials {
  const eks = new EKSClient({ region: settings.region });
  return new EksCredentials({
    cluster: settings.config.cluster,
    region: settings.region,
    // The EKS client's own provider chain: the function's role, refreshed by the SDK.
    credentials: eks.config.credentials,
    lookup: new SdkEksClusterLookup(eks),
    now: Date.now,
  });
}

/**
 * Builds the admission runtime from the Lambda environment. Values a Service gives back go to
 * the settle queue; `onSettleLost` hears of a task the queue refused (the repair pass finishes it).
 */
export function lambdaAdmissionRuntime(
  onSettleLost: (task: SettleTask, error: unknown) => void,
): LambdaAdmissionRuntime {
  const settings = lambdaSettings();
  const queue = lambdaSettleQueue(settings);
  const runtime = createRuntime({
    config: settings.config,
    dynamo: dynamoClient({ region: settings.region }),
    tableName: settings.tableName,
    clusterApi: new HttpsClusterReader({ access: eksCredentials(settings) }),
    settler: () => new QueueSettler(queue, settings.config.settle.delaySeconds, onSettleLost),
  });
  return { settings, runtime };
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

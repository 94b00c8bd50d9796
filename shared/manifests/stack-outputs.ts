/**
 * The CloudFormation output names of a berth stack. The CDK stack writes them and
 * `berth manifests --stack` reads them, so both sides use this one list.
 */
export const STACK_OUTPUTS = {
  /** `https://<id>.lambda-url.<region>.on.aws/admission/`: the webhook URL without its secret. */
  webhookBaseUrl: 'WebhookBaseUrl',
  /** The Secrets Manager secret whose value is the webhook's last path segment. */
  webhookSecretArn: 'WebhookSecretArn',
  /**
   * A stack of several clusters: the webhook function's URL, below which each cluster's webhook
   * is `clusters/<name>/admission/<secret>`.
   */
  webhookUrl: 'WebhookUrl',
  /** A stack of several clusters: `{ "<cluster>": "<secret ARN>" }` as JSON. */
  webhookSecretArns: 'WebhookSecretArns',
  /**
   * The ENI IP assignment API (`POST /v1/nodes/{node}/ips`), SigV4 (`lambda` service); in a stack
   * of several clusters, each cluster's API is below it at `clusters/<name>`.
   */
  nodeIpsUrl: 'NodeIpsUrl',
  /** The capacity API (`GET /v1/capacity`), SigV4 (`lambda` service), for the granted roles. */
  capacityUrl: 'CapacityUrl',
  /** With `-c capacityCallerAccount`: the role the stack made for the matchmaker to assume. */
  matchmakerRoleArn: 'MatchmakerRoleArn',
  /** The DynamoDB table holding every allocation. */
  tableName: 'TableName',
  /** SNS topic the alarms notify; subscribe an address or a pager to it. */
  alarmTopicArn: 'AlarmTopicArn',
  /** With `-c accelerator=true`: the custom routing endpoint group the stack made. */
  acceleratorEndpointGroupArn: 'AcceleratorEndpointGroupArn',
  /** With `-c accelerator=true`: the accelerator's static addresses, comma-separated. */
  acceleratorIpAddresses: 'AcceleratorIpAddresses',
} as const;

/** The name of the stack for one cluster (`npx cdk deploy -c cluster=NAME`). */
export function stackNameFor(cluster: string): string {
  return `berth-${cluster}`;
}

/**
 * The CloudFormation export by which a stack claims a cluster: export names are unique in an
 * account and Region, so two berth stacks can never serve one cluster (each with its own table,
 * both would hand out its IPs and ports).
 */
export function clusterClaimExport(cluster: string): string {
  return `berth-cluster-${cluster}`;
}

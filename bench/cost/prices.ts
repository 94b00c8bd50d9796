/**
 * The one price table of the cost benchmark: AWS on-demand list prices in us-east-1 (US East,
 * N. Virginia), USD, as of the date below. Each price names where it was checked; `confirmed`
 * is false where no source could be read this time and the figure is AWS's long-standing list
 * price, to be checked before it is believed. Free tiers are listed apart: the bill is computed
 * without them (an account running a fleet has other work using them up) and with them.
 */

/**
 * When the prices were taken: read that day from stored copies of the pricing pages and of the
 * articles named in each `source` (the newest of them dated mid-2026).
 */
export const PRICES_AS_OF = '2026-11-25';

/** The region every price is for. */
export const PRICE_REGION = 'us-east-1';

/** One price: what it costs, per what, and where it was checked. */
export interface Price {
  readonly usd: number;
  readonly per: string;
  readonly source: string;
  readonly confirmed: boolean;
}

const price = (usd: number, per: string, source: string, confirmed = true): Price => ({
  usd,
  per,
  source,
  confirmed,
});

/** Every price the bill uses. */
export const PRICES = {
  // DynamoDB, Standard table class. On-demand throughput after the 50% cut of 1 Nov 2024.
  dynamoWriteRequestUnit: price(
    0.625 / 1e6,
    'write request unit (on-demand)',
    'aws.amazon.com/dynamodb/pricing/on-demand; Nov 2024 cut: airbyte.com DynamoDB pricing, jusdb.com',
  ),
  dynamoReadRequestUnit: price(
    0.125 / 1e6,
    'read request unit (on-demand)',
    'aws.amazon.com/dynamodb/pricing/on-demand; Nov 2024 cut: airbyte.com DynamoDB pricing',
  ),
  dynamoWcuHour: price(
    0.00065,
    'provisioned WCU-hour',
    'aws.amazon.com/dynamodb/pricing/provisioned; zeonedge.com',
  ),
  dynamoRcuHour: price(
    0.00013,
    'provisioned RCU-hour',
    'aws.amazon.com/dynamodb/pricing/provisioned; zeonedge.com',
  ),
  dynamoStorageGbMonth: price(0.25, 'GB-month stored', 'aws.amazon.com/dynamodb/pricing'),
  dynamoPitrGbMonth: price(
    0.2,
    'GB-month under point-in-time recovery',
    'aws.amazon.com/dynamodb/pricing (continuous backups)',
    false,
  ),
  // Lambda on arm64 (Graviton), first tier (7.5 billion GB-s a month). INIT is billed too.
  lambdaArmGbSecond: price(
    0.0000133334,
    'GB-second (arm64)',
    'aws.amazon.com/lambda/pricing; cloudchipr.com Lambda pricing',
  ),
  lambdaRequest: price(0.2 / 1e6, 'request', 'aws.amazon.com/lambda/pricing'),
  lambdaDataOutGb: price(
    0.09,
    'GB out to the internet from outside-Region callers (function URL responses)',
    'aws.amazon.com/lambda/pricing (Data Transfer: charged at EC2 rates only to and from outside the Region the function ran in); aws.amazon.com/ec2/pricing/on-demand (data transfer out)',
    false,
  ),
  // Private-network mode (`-c vpc`): AWS PrivateLink interface endpoints.
  interfaceEndpointAzHour: price(
    0.01,
    'interface VPC endpoint, per Availability Zone and hour',
    'aws.amazon.com/privatelink/pricing (interface endpoint pricing, US East)',
    false,
  ),
  interfaceEndpointGb: price(
    0.01,
    'GB processed by interface VPC endpoints (first PB a month)',
    'aws.amazon.com/privatelink/pricing (interface endpoint pricing, US East)',
    false,
  ),
  // A Network Load Balancer's hour, whatever its listeners and targets (they have no price of
  // their own); its capacity units (NLCU) follow the traffic, the same for every way of fronting.
  nlbHour: price(
    0.0225,
    'Network Load Balancer-hour',
    'aws.amazon.com/elasticloadbalancing/pricing; clustercost.com NLB pricing 2025; awsnegotiations.com ELB cost (May 2026)',
  ),
  sqsRequest: price(
    0.4 / 1e6,
    'standard queue request (64 KB chunk)',
    'cloudburn.io SQS pricing; unanswered.io SQS guide',
  ),
  schedulerInvocation: price(
    1 / 1e6,
    'EventBridge Scheduler invocation',
    'cloudburn.io EventBridge pricing',
  ),
  secretMonth: price(
    0.4,
    'secret-month',
    'hivebook.wiki Secrets Manager; aws.amazon.com/secrets-manager/pricing',
  ),
  secretApiCall: price(0.05 / 1e4, 'Secrets Manager API call', 'hivebook.wiki Secrets Manager'),
  cloudwatchMetricMonth: price(
    0.3,
    'custom metric-month (first 10,000)',
    'aws.amazon.com/cloudwatch/pricing; cal53.calculator.city',
  ),
  cloudwatchAlarmMetricMonth: price(
    0.1,
    'standard-resolution alarm metric-month',
    'aws.amazon.com/cloudwatch/pricing',
    false,
  ),
  cloudwatchDashboardMonth: price(
    3,
    'custom dashboard-month',
    'aws.amazon.com/cloudwatch/pricing',
    false,
  ),
  logsIngestedGb: price(
    0.5,
    'GB of logs ingested (Lambda vended logs, first tier)',
    'hykell.com CloudWatch Logs; duckbillgroup.com (Lambda tiered logs, May 2025)',
  ),
  logsStoredGbMonth: price(0.03, 'GB-month of logs stored', 'hykell.com CloudWatch Logs'),
  xrayTraceRecorded: price(
    5 / 1e6,
    'X-Ray trace recorded',
    'aws.amazon.com/xray/pricing (de); awsnegotiations.com',
  ),
  kmsKeyMonth: price(1, 'customer managed KMS key-month', 'aws.amazon.com/kms/pricing'),
  kmsRequest: price(0.03 / 1e4, 'KMS request', 'aws.amazon.com/kms/pricing; wring.co'),
  // The fleet's nodes, for what the in-cluster alternative reserves.
  nodeHour: price(
    0.68,
    'c5.4xlarge on-demand hour (16 vCPU, 32 GiB, Linux)',
    'docs.aws.amazon.com autoscaling "Spot price per unit hour example", its on-demand column (AWS calls the table example pricing; it matches the long-standing list price)',
  ),
  fargateVcpuHour: price(
    0.04048,
    'Fargate Linux/x86 vCPU-hour (only its ratio to the GB-hour is used)',
    'vantage.sh Fargate pricing; wring.co',
  ),
  fargateGbHour: price(0.004445, 'Fargate Linux/x86 GB-hour', 'vantage.sh Fargate pricing'),
} as const satisfies Record<string, Price>;

/** A price's key. */
export type PriceKey = keyof typeof PRICES;

/** Always-free monthly allowances (per account and region), in each price's unit. */
export const FREE_TIERS: Readonly<Partial<Record<PriceKey, { amount: number; source: string }>>> = {
  lambdaArmGbSecond: { amount: 400_000, source: 'Lambda free tier: 400,000 GB-s a month' },
  lambdaRequest: { amount: 1_000_000, source: 'Lambda free tier: 1M requests a month' },
  lambdaDataOutGb: { amount: 100, source: 'AWS free tier: 100 GB a month out to the internet' },
  sqsRequest: { amount: 1_000_000, source: 'SQS free tier: 1M requests a month' },
  schedulerInvocation: { amount: 14_000_000, source: 'Scheduler free tier: 14M a month' },
  dynamoStorageGbMonth: { amount: 25, source: 'DynamoDB free tier: 25 GB stored' },
  dynamoWcuHour: { amount: 25 * 720, source: 'DynamoDB free tier: 25 provisioned WCU' },
  dynamoRcuHour: { amount: 25 * 720, source: 'DynamoDB free tier: 25 provisioned RCU' },
  cloudwatchMetricMonth: { amount: 10, source: 'CloudWatch free tier: 10 custom metrics' },
  cloudwatchAlarmMetricMonth: { amount: 10, source: 'CloudWatch free tier: 10 alarm metrics' },
  cloudwatchDashboardMonth: { amount: 3, source: 'CloudWatch free tier: 3 dashboards' },
  logsIngestedGb: { amount: 5, source: 'CloudWatch free tier: 5 GB of log data' },
  xrayTraceRecorded: { amount: 100_000, source: 'X-Ray free tier: 100,000 traces recorded' },
  kmsRequest: { amount: 20_000, source: 'KMS free tier: 20,000 requests' },
};

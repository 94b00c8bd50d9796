/**
 * The reference fleet of the cost issue, the config each of its clusters deploys, every rate the
 * bill has to assume, and the monthly operation counts that follow from them. Per-operation
 * costs are measured (meter.ts); how often each operation happens is stated here, once.
 */
import type { FunctionName } from '../../infra/constructs/berth-function.js';
import type { StackResources } from './stack.js';

/** The fleet: 3 clusters, 300 game nodes, 10,000 game servers at once, 150,000 sessions a day. */
export const REFERENCE_FLEET = {
  clusters: 3,
  gameNodes: 300,
  concurrentGameServers: 10_000,
  gameSessionsPerDay: 150_000,
  services: 2_000,
  /**
   * The game nodes: 33 game servers a node at 450m CPU each fill a c5.4xlarge (15.89 vCPU
   * allocatable) to 94%, so the scale pass finds the fleet about right (the example game server
   * asks 500m, which would not fit 33).
   */
  node: { type: 'c5.4xlarge', vcpu: 16, memoryGib: 32, allocatableCpu: '15890m', maxPods: 110 },
  gameServerCpu: '450m',
} as const;

/** One cluster's share of the fleet: what one berth stack serves. */
export const CLUSTER_SHARE = {
  nodes: REFERENCE_FLEET.gameNodes / REFERENCE_FLEET.clusters,
  gameServers: Math.round(REFERENCE_FLEET.concurrentGameServers / REFERENCE_FLEET.clusters),
  sessionsPerDay: REFERENCE_FLEET.gameSessionsPerDay / REFERENCE_FLEET.clusters,
  services: Math.round(REFERENCE_FLEET.services / REFERENCE_FLEET.clusters),
} as const;

/**
 * The config of one reference cluster: berth's defaults (repair every 180 s, scale and ENI every
 * 60 s, host ports 7000-8000, ENI `prefix` mode) with a node pool sized for 100 nodes.
 */
export const REFERENCE_CONFIG = {
  cluster: 'reference',
  scale: {
    maxNodes: 150,
    gameServerCpuMillis: 450,
    nodePool: { type: 'eks-nodegroup', name: 'game-nodes' },
  },
} as const;

/**
 * The reference fleet's one berth stack: every cluster a section of one config, served by one
 * table and one set of functions (`cdk deploy -c clusters=…`).
 */
export const REFERENCE_STACK_CONFIG = {
  scale: REFERENCE_CONFIG.scale,
  clusters: Object.fromEntries(
    Array.from({ length: REFERENCE_FLEET.clusters }, (_, index) => [
      `reference-${String.fromCharCode(97 + index)}`,
      {},
    ]),
  ),
};

/** A rate the bill cannot measure, with the reason for its value. */
export interface Assumption {
  readonly value: number;
  readonly why: string;
}

const assume = (value: number, why: string): Assumption => ({ value, why });

/** Every rate assumed; printed with the bill and written to the results. */
export const ASSUMPTIONS = {
  daysPerMonth: assume(30, 'a 30-day month (720 hours) for every line'),
  otherBindingsPerSession: assume(
    0.05,
    'pods/binding reaches berth for every pod (a Binding carries no labels to filter on): besides game servers, 5% more bindings of pods without berth ports (DaemonSets on new nodes, system pods), each answered after one pod read',
  ),
  serviceUpdatesPerDay: assume(
    1,
    'each Service is updated once a day (deploys, annotations, controllers) without changing its values; status updates go to services/status and never reach berth',
  ),
  serviceReplacementsPerDay: assume(
    0.05,
    '5% of Services are deleted and created again each day (releases of the platform around the game servers)',
  ),
  nodePortShare: assume(0.2, 'one Service in five is a NodePort Service, the rest ClusterIP'),
  finalDeletesPerSession: assume(
    1,
    'after a graceful DELETE has set deletionTimestamp, the kubelet sends the DELETE that removes the pod (grace period 0) once its containers have stopped (kubernetes pkg/kubelet/status/status_manager.go, syncPod); one a game session, billed only where the webhook configuration sends it to berth',
  ),
  callersOutsideRegionShare: assume(
    0,
    "share of the function URLs' answers that leave the Region: the EKS apiserver (webhook) and the nodes (node IP API) run in the stack's Region, and Lambda charges data in and out at EC2 rates only from outside the Region the function ran in (aws.amazon.com/lambda/pricing, Data Transfer)",
  ),
  triggeredPassesPerSession: assume(
    0.03,
    "scale passes an admission asks for between the scheduled ones (shared/scale/admission-trigger.ts): only when the game servers' net rise since the last pass outruns the slots it left, at most one per 10 s per cluster; priced at about one per scheduled pass for the reference cluster's 50,000 sessions a day (1,440 / 50,000), an upper estimate for a day whose level climbs half its hours",
  ),
  nodeLaunchesPerDayShare: assume(
    0.2,
    'a fifth of the nodes are replaced each day (scale-in and scale-out around the daily curve); each replacement sends the ENI function 3 EC2 state-change events (running, shutting-down, terminated)',
  ),
  coldStartsPerDayHttp: assume(
    100,
    'cold starts a day per cluster of each HTTP function (admission, node-ips): environments recycled every few hours plus concurrency bursts',
  ),
  coldStartsPerDayOther: assume(
    24,
    "cold starts a day of each other function of a stack (its environment recycled about hourly; one stack's passes for all its clusters run often enough to share it)",
  ),
  initMs: assume(
    300,
    'INIT duration of a cold start (billed since Aug 2025): the admission benchmark measured a 151 ms median init; the Secrets Manager read and EKS token add to it',
  ),
  kubernetesRttMs: assume(
    10,
    'added per Kubernetes API request to the CPU time measured: the fake apiserver answers on loopback, EKS from a Lambda outside the VPC takes about this long',
  ),
  sqsSendRttMs: assume(10, 'added per SQS SendMessage to the CPU time measured'),
  dynamoRttMs: assume(
    5,
    'added per DynamoDB round trip (requests sent together count once) to the CPU time measured: DynamoDB answers a Lambda in its Region in single-digit milliseconds',
  ),
  racingWriters: assume(
    32,
    'admission containers writing at once when the host-port and Service paths are metered for lost races: 32 warm containers, each with its own view of the counts, as the host-port benchmark runs them (a burst of a fleet scale-up; at the fleet’s average rate fewer race, so lost races err high)',
  ),
  ec2CallRttMs: assume(
    80,
    'added per EC2 API call to the CPU time measured (the EC2 fake answers at once)',
  ),
  sqsIdleReceivesPerMinute: assume(
    15,
    'the settle queue event source polls an empty queue with long polling: about 5 pollers × 3 receives a minute (not in AWS documentation that could be read; commonly reported)',
  ),
  sqsRequestsPerMessage: assume(
    2,
    'besides its SendMessage, each settle message costs a ReceiveMessage and a DeleteMessageBatch (one message a batch at this rate)',
  ),
  logEventOverheadBytes: assume(
    26,
    'bytes CloudWatch Logs counts per log event beyond its message (its PutLogEvents size rule)',
  ),
  logsStoredPerIngested: assume(
    1,
    'GB stored per GB ingested over the 30-day retention: AWS bills stored logs compressed, so this is an upper bound',
  ),
  xrayReservoirPerSecond: assume(
    1,
    'Lambda active tracing samples 1 request a second and 5% of the rest, per function (Lambda developer guide: not configurable); taken per function, each a Poisson stream',
  ),
  xrayFixedRate: assume(0.05, 'the 5% of requests above the reservoir'),
  provisionedTargetUtilization: assume(
    0.7,
    'provisioned capacity with autoscaling tracks each hour of the daily curve at 70% utilisation, never below 1 unit per table; scale-in lag and bursts are absorbed by burst capacity and not priced',
  ),
  secretsReadsPerColdStart: assume(
    1,
    "the admission function reads each of its stack's path secrets (one a cluster) once per cold start",
  ),
  privateNetworkAzs: assume(
    2,
    'Availability Zones of the subnets given to -c subnets in private-network mode: EKS asks for subnets in at least two; each interface endpoint is billed per zone (a third zone adds half again)',
  ),
  endpointBytesPerRequest: assume(
    2_000,
    'bytes an AWS API request and its answer carry through an interface endpoint (headers, TLS records, a small item), for the GB it processes',
  ),
  fullVcpuMemoryMb: assume(
    1769,
    'durations are billed as the CPU time measured on this machine (one full core; the fake apiserver in the same process) plus the assumed round trips; Lambda gives a function one vCPU at 1,769 MB and a share below, so CPU-bound work runs longer there: the upper bound stretches every duration by that share',
  ),
} as const satisfies Record<string, Assumption>;

/**
 * What an operation's count follows: game sessions, Services, game nodes, or none of them (the
 * stack's own).
 */
export type Driver = 'sessions' | 'services' | 'nodes' | 'fixed';

/** Every kind of operation the bill prices, with the function that runs it. */
export const OPERATIONS = {
  'pod-create': {
    fn: 'admission',
    label: 'pod CREATE (host ports)',
    diurnal: true,
    grows: 'sessions',
  },
  'pod-binding': {
    fn: 'admission',
    label: 'pods/binding of a game server',
    diurnal: true,
    grows: 'sessions',
  },
  'pod-binding-other': {
    fn: 'admission',
    label: 'pods/binding of another pod',
    diurnal: true,
    grows: 'sessions',
  },
  'pod-delete': {
    fn: 'admission',
    label: 'pod DELETE (host ports)',
    diurnal: true,
    grows: 'sessions',
  },
  'pod-delete-final': {
    fn: 'admission',
    label: 'kubelet’s final pod DELETE',
    diurnal: true,
    grows: 'sessions',
  },
  'service-create': {
    fn: 'admission',
    label: 'Service CREATE',
    diurnal: false,
    grows: 'services',
  },
  'service-update': {
    fn: 'admission',
    label: 'Service UPDATE',
    diurnal: false,
    grows: 'services',
  },
  'service-delete': {
    fn: 'admission',
    label: 'Service DELETE',
    diurnal: false,
    grows: 'services',
  },
  'settle-look': { fn: 'settle', label: 'settle look', diurnal: false, grows: 'services' },
  'eni-node-report': {
    fn: 'node-ips',
    label: 'node agent report (use moved)',
    diurnal: true,
    grows: 'sessions',
  },
  'eni-node-heartbeat': {
    fn: 'node-ips',
    label: 'node agent heartbeat',
    diurnal: false,
    grows: 'nodes',
  },
  'eni-instance-event': {
    fn: 'eni',
    label: 'ENI instance state event',
    diurnal: false,
    grows: 'fixed',
  },
  'eni-pass': { fn: 'eni', label: 'ENI pass', diurnal: false, grows: 'fixed' },
  'repair-pass': { fn: 'repair', label: 'repair pass', diurnal: false, grows: 'fixed' },
  'scale-pass': { fn: 'scale', label: 'scale pass', diurnal: false, grows: 'fixed' },
  'scale-pass-triggered': {
    fn: 'scale',
    label: 'scale pass an admission asked for',
    diurnal: true,
    grows: 'sessions',
  },
} as const satisfies Record<
  string,
  { fn: FunctionName; label: string; diurnal: boolean; grows: Driver }
>;

/** One kind of operation. */
export type OperationKind = keyof typeof OPERATIONS;

/** Ratios measured while metering, which turn one count into another. */
export interface MeasuredRatios {
  /** Settle looks per Service CREATE, UPDATE and DELETE (tasks queued plus re-checks). */
  readonly settleLooksPer: Readonly<Record<'create' | 'update' | 'delete', number>>;
  /** Reports a node's agent makes because its use moved, per game session on the node. */
  readonly reportsPerSession: number;
  /** Reports a node's agent makes a day with nothing moved, to show berth it is alive. */
  readonly heartbeatsPerNodeDay: number;
  /**
   * Share of each admission operation's reviews the apiserver sends to berth at all, by the
   * webhook configuration's rules, selectors and match conditions (1 for the other functions).
   */
  readonly calledShare: Readonly<Record<OperationKind, number>>;
}

/** How many times a month each operation runs across the whole fleet. */
export function monthlyOperations(
  stack: Pick<StackResources, 'scheduleMinutes'>,
  ratios: MeasuredRatios,
): Record<OperationKind, number> {
  const days = ASSUMPTIONS.daysPerMonth.value;
  const { clusters } = REFERENCE_FLEET;
  const sessions = REFERENCE_FLEET.gameSessionsPerDay * days;
  const serviceCreates =
    REFERENCE_FLEET.services * ASSUMPTIONS.serviceReplacementsPerDay.value * days;
  const serviceUpdates = REFERENCE_FLEET.services * ASSUMPTIONS.serviceUpdatesPerDay.value * days;
  const passes = (minutes: number) => ((days * 24 * 60) / minutes) * clusters;
  const called = ratios.calledShare;
  // Settle looks follow the Service reviews that reach berth.
  const settleLooks =
    serviceCreates * called['service-create'] * ratios.settleLooksPer.create +
    serviceUpdates * called['service-update'] * ratios.settleLooksPer.update +
    serviceCreates * called['service-delete'] * ratios.settleLooksPer.delete;
  const happening: Record<OperationKind, number> = {
    'pod-create': sessions,
    'pod-binding': sessions,
    'pod-binding-other': sessions * ASSUMPTIONS.otherBindingsPerSession.value,
    'pod-delete': sessions,
    'pod-delete-final': sessions * ASSUMPTIONS.finalDeletesPerSession.value,
    'service-create': serviceCreates,
    'service-update': serviceUpdates,
    'service-delete': serviceCreates,
    'settle-look': settleLooks,
    'eni-node-report': sessions * ratios.reportsPerSession,
    'eni-node-heartbeat': REFERENCE_FLEET.gameNodes * ratios.heartbeatsPerNodeDay * days,
    'eni-instance-event':
      REFERENCE_FLEET.gameNodes * ASSUMPTIONS.nodeLaunchesPerDayShare.value * 3 * days,
    'eni-pass': passes(stack.scheduleMinutes.eni),
    'repair-pass': passes(stack.scheduleMinutes.repair),
    'scale-pass': passes(stack.scheduleMinutes.scale),
    'scale-pass-triggered': sessions * ASSUMPTIONS.triggeredPassesPerSession.value,
  };
  // What happens in the cluster, times the share of it berth is called for.
  return Object.fromEntries(
    (Object.keys(happening) as OperationKind[]).map((kind) => [
      kind,
      happening[kind] * (kind === 'settle-look' ? 1 : called[kind]),
    ]),
  ) as Record<OperationKind, number>;
}

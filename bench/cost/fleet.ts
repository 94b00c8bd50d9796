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
  cniReleasesPerPod: assume(
    1,
    "one CNI DEL per pod with its cached address (kubelet's repeated DELs find nothing and cost one release each; not counted)",
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
    'added per Kubernetes API request to the measured duration: the fake apiserver answers on loopback, EKS from a Lambda outside the VPC takes about this long',
  ),
  sqsSendRttMs: assume(10, 'added per SQS SendMessage to the measured duration'),
  ec2CallRttMs: assume(
    80,
    'added per EC2 API call to the measured duration (the EC2 fake answers at once)',
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
  fullVcpuMemoryMb: assume(
    1769,
    'durations are billed as measured on this machine (one full core, DynamoDB Local on loopback, the fake apiserver in the same process); Lambda gives a function one vCPU at 1,769 MB and a share below, so CPU-bound passes run longer there: the upper bound stretches every duration by that share',
  ),
} as const satisfies Record<string, Assumption>;

/** Every kind of operation the bill prices, with the function that runs it. */
export const OPERATIONS = {
  'pod-create': { fn: 'admission', label: 'pod CREATE (host ports)', diurnal: true },
  'pod-binding': { fn: 'admission', label: 'pods/binding of a game server', diurnal: true },
  'pod-binding-other': { fn: 'admission', label: 'pods/binding of another pod', diurnal: true },
  'pod-delete': { fn: 'admission', label: 'pod DELETE (host ports)', diurnal: true },
  'service-create': { fn: 'admission', label: 'Service CREATE', diurnal: false },
  'service-update': { fn: 'admission', label: 'Service UPDATE', diurnal: false },
  'service-delete': { fn: 'admission', label: 'Service DELETE', diurnal: false },
  'settle-look': { fn: 'settle', label: 'settle look', diurnal: false },
  'eni-assign': { fn: 'node-ips', label: 'ENI IP assign', diurnal: true },
  'eni-release': { fn: 'node-ips', label: 'ENI IP release', diurnal: true },
  'eni-refill': { fn: 'eni', label: 'ENI background refill', diurnal: true },
  'eni-instance-event': { fn: 'eni', label: 'ENI instance state event', diurnal: false },
  'eni-pass': { fn: 'eni', label: 'ENI pass', diurnal: false },
  'repair-pass': { fn: 'repair', label: 'repair pass', diurnal: false },
  'scale-pass': { fn: 'scale', label: 'scale pass', diurnal: false },
} as const satisfies Record<string, { fn: FunctionName; label: string; diurnal: boolean }>;

/** One kind of operation. */
export type OperationKind = keyof typeof OPERATIONS;

/** Ratios measured while metering, which turn one count into another. */
export interface MeasuredRatios {
  /** Settle looks per Service CREATE, UPDATE and DELETE (tasks queued plus re-checks). */
  readonly settleLooksPer: Readonly<Record<'create' | 'update' | 'delete', number>>;
  /** Background refills the node IP API asked for per assign invocation. */
  readonly refillsPerAssign: number;
  /** Assign invocations per pod: a pool with no address ready answers 503 and is asked again. */
  readonly assignsPerPod: number;
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
  const assigns = sessions * ratios.assignsPerPod;
  return {
    'pod-create': sessions,
    'pod-binding': sessions,
    'pod-binding-other': sessions * ASSUMPTIONS.otherBindingsPerSession.value,
    'pod-delete': sessions,
    'service-create': serviceCreates,
    'service-update': serviceUpdates,
    'service-delete': serviceCreates,
    'settle-look':
      serviceCreates * ratios.settleLooksPer.create +
      serviceUpdates * ratios.settleLooksPer.update +
      serviceCreates * ratios.settleLooksPer.delete,
    'eni-assign': assigns,
    'eni-release': sessions * ASSUMPTIONS.cniReleasesPerPod.value,
    'eni-refill': assigns * ratios.refillsPerAssign,
    'eni-instance-event':
      REFERENCE_FLEET.gameNodes * ASSUMPTIONS.nodeLaunchesPerDayShare.value * 3 * days,
    'eni-pass': passes(stack.scheduleMinutes.eni),
    'repair-pass': passes(stack.scheduleMinutes.repair),
    'scale-pass': passes(stack.scheduleMinutes.scale),
  };
}

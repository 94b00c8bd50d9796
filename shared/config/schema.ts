/**
 * The one schema of berth's configuration. Every problem is collected, so
 * a user fixes a bad file in one round: unknown keys, bad values and conflicting ranges alike.
 */
import { z } from 'zod';
import { type CidrBlock, formatCidr, parseCidr } from '../net/ip.js';
import { type PortRange, parsePortRange } from '../net/port-range.js';
import { IPV6_MIN_SERVICE_PREFIX } from '../net/value-range.js';
import { crossFieldProblems } from './cross-field.js';
import { ConfigError } from './errors.js';
import { describeIssue, primaryIssues } from './messages.js';
import { RECORD_KEY_RULES, type RecordKeyRule } from './record-keys.js';
import { FREED_AFTER_COMMIT_SECONDS, MAX_SETTLE_DELAY_SECONDS } from './settle-schedule.js';

/** Node address types in `status.addresses`, in the user's order of precedence. */
export const NODE_ADDRESS_TYPES = [
  'ExternalIP',
  'InternalIP',
  'ExternalDNS',
  'InternalDNS',
  'Hostname',
] as const;
/** One of `NODE_ADDRESS_TYPES`. */
export type NodeAddressType = (typeof NODE_ADDRESS_TYPES)[number];

/** kube-apiserver's `maxCIDRBits`: an IPv4 service CIDR may have at most 20 host bits. */
const MAX_SERVICE_CIDR_HOST_BITS = 20;

const keyOf = (rule: RecordKeyRule) => z.string().regex(rule.pattern, { message: rule.message });

/** The seconds `settle.delaySeconds` may take, as its messages say them. */
const SETTLE_DELAY_RANGE = `1-${MAX_SETTLE_DELAY_SECONDS}`;

const seconds = (fallback: number) => z.number().int().min(0).default(fallback);

const cidrText = z.string().transform((text, ctx): CidrBlock => {
  const block = parseCidr(text.trim());
  if (block === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is not a CIDR block such as 10.100.0.0/16 (host bits must be zero)`,
    });
    return z.NEVER;
  }
  if (block.family === 'IPv6' && block.prefixLength < IPV6_MIN_SERVICE_PREFIX) {
    const widest = formatCidr({ ...block, prefixLength: IPV6_MIN_SERVICE_PREFIX });
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is too large: an IPv6 service range is at most a /${IPV6_MIN_SERVICE_PREFIX}, as the kube-apiserver's IPAddress allocator allows; use ${widest} or a longer prefix`,
    });
    return z.NEVER;
  }
  if (block.family === 'IPv4' && block.hostBits > MAX_SERVICE_CIDR_HOST_BITS) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is too large: at most ${MAX_SERVICE_CIDR_HOST_BITS} host bits (an IPv4 /12), as the kube-apiserver allows`,
    });
    return z.NEVER;
  }
  if (block.hostBits < 3) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is too small: the service cluster IP range must be at least 8 IP addresses`,
    });
    return z.NEVER;
  }
  return block;
});

const portRangeText = z.string().transform((text, ctx): PortRange => {
  const parsed = parsePortRange(text);
  if (typeof parsed === 'string') {
    ctx.addIssue({ code: 'custom', message: `${parsed} (write it as "30000-32767")` });
    return z.NEVER;
  }
  return parsed;
});

const labelSelector = z
  .string()
  .regex(/^([A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)*$/, {
    message: 'must be key=value pairs separated by commas, e.g. "role=game-server"',
  });

/**
 * A node count, absolute (`3`) or as a share of the managed nodes (`"10%"`), as Karpenter's
 * disruption budgets are written.
 */
const nodeBudget = z.union([
  z.number().int().min(0),
  z.string().regex(/^(100|[1-9]?[0-9])%$/, {
    message: 'must be a node count or a percentage such as "10%"',
  }),
]);

/**
 * The name of an Agones Counter or List (`scale.gameState.counter`): a key of the GameServer's
 * `status.counters` or `status.lists`, as the Fleet's template declares it (`rooms`,
 * `sessions`, `players`).
 */
const agonesCounterName = z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/, {
  message:
    'must name an Agones Counter or List as the Fleet template declares it, e.g. "sessions": 1-63 letters, digits, ".", "_" or "-", starting and ending with a letter or digit',
});

/**
 * A GameServer label key (`scale.gameState.sessionLabel`): an optional DNS-subdomain prefix and
 * a name of 1-63 letters, digits, ".", "_" or "-" (Kubernetes' qualified names).
 */
const gameServerLabelKey = z
  .string()
  .regex(
    /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/,
    {
      message:
        'must be a Kubernetes label key such as "agones.dev/sdk-gs-session-ready": an optional DNS prefix and "/", then 1-63 letters, digits, ".", "_" or "-"',
    },
  );

const poolName = (what: string) =>
  z.string({ error: `required: ${what}` }).min(1, { message: `required: ${what}` });

const nodePool = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  z.strictObject({ type: z.literal('kubernetes') }),
  z.strictObject({ type: z.literal('asg'), name: poolName('the Auto Scaling group name') }),
  z.strictObject({
    type: z.literal('eks-nodegroup'),
    name: poolName('the EKS managed node group name'),
  }),
  z.strictObject({ type: z.literal('karpenter'), name: poolName('the Karpenter NodePool name') }),
  // EKS Auto Mode: its Karpenter and NodePools, scaled as `karpenter` (shared/node-pool/auto-mode.ts).
  z.strictObject({
    type: z.literal('auto-mode'),
    name: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, {
        message: 'must be a NodePool name (a lower-case DNS subdomain)',
      })
      .refine((name) => name !== 'system', {
        message:
          'the built-in NodePool system is tainted CriticalAddonsOnly for cluster add-ons; name general-purpose or a NodePool of your own',
      })
      .default('general-purpose'),
  }),
]);

/** A cluster name: a DNS label (the EKS cluster's name, and every key of its items starts with it). */
export const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A Network Load Balancer's ARN. */
const nlbArn = z
  .string()
  .regex(
    /^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:loadbalancer\/net\/[^/\s]+\/[^/\s]+$/,
    {
      message:
        'must be a Network Load Balancer ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/net/NAME/ID)',
    },
  );

/** A Global Accelerator custom routing endpoint group ARN (Global Accelerator ARNs name no Region). */
const acceleratorArn = z
  .string()
  .regex(
    /^arn:aws[a-z-]*:globalaccelerator::\d{12}:accelerator\/[^/\s]+\/listener\/[^/\s]+\/endpoint-group\/[^/\s]+$/,
    {
      message:
        'must be a Global Accelerator endpoint group ARN (…:accelerator/ID/listener/ID/endpoint-group/ID)',
    },
  );

const configSchema = z.strictObject({
  cluster: z
    .string()
    .regex(CLUSTER_NAME, {
      message: 'must be a DNS label: lower-case letters, digits and "-", at most 63',
    })
    .default('local'),
  serviceCIDRs: z
    .array(cidrText)
    .min(1, { message: 'needs one CIDR, or two of different IP families' })
    .prefault(['10.100.0.0/16'])
    .check((ctx) => {
      // How many is counted in cross-field.ts: .max(2) here would hide the entries' problems.
      if (ctx.value.length > 2) return;
      const [first, second] = ctx.value;
      if (first && second && first.family === second.family) {
        ctx.issues.push({
          code: 'custom',
          input: ctx.value,
          path: [1],
          message: `${formatCidr(second)} is of the same family as ${formatCidr(first)}; dual stack needs one IPv4 and one IPv6 CIDR`,
        });
      }
    }),
  // The cluster's ServiceCIDRs (Kubernetes 1.33+) are read at start and on every repair pass
  // (shared/services/cluster-cidrs.ts); following them adds the ones created at runtime.
  services: z
    .strictObject({
      followClusterCIDRs: z.boolean().default(false),
    })
    .prefault({}),
  nodePortRange: portRangeText.prefault('30000-32767'),
  hostPortRanges: z
    .record(keyOf(RECORD_KEY_RULES.hostPortRanges), portRangeText)
    .prefault({ default: '7000-8000' }),
  // Host ports a namespace may hold at once, as ResourceQuota caps NodePorts: (pod, port)
  // allocations of every range, a TCPUDP port once, a block's ports each. Unlisted: no cap.
  hostPortQuotas: z
    .record(keyOf(RECORD_KEY_RULES.hostPortQuotas), z.number().int().min(0))
    .default({}),
  nodeAddressTypes: z
    .array(z.enum(NODE_ADDRESS_TYPES))
    .min(1)
    .default(['ExternalIP', 'InternalIP'])
    .refine((types) => new Set(types).size === types.length, {
      message: 'lists an address type twice',
    }),
  // The capacity view (shared/capacity/, docs/api.md): its figures are always in the scale
  // function's `capacity` log line; as CloudWatch metrics (about eight a cluster, each billed
  // every month it is published) only when asked.
  capacity: z
    .strictObject({
      cloudWatchMetrics: z.boolean().default(false),
    })
    .prefault({}),
  repair: z
    .strictObject({
      intervalSeconds: seconds(180),
      leakGracePasses: z.number().int().min(1).max(100).default(3),
    })
    .prefault({}),
  scale: z
    .strictObject({
      intervalSeconds: seconds(60),
      nodeSelector: labelSelector.default('role=game-server'),
      gameServerCpuMillis: z.number().int().min(1).default(100),
      bufferGameServers: z.number().int().min(0).default(10),
      minNodes: z.number().int().min(0).default(1),
      maxNodes: z.number().int().min(1).default(10),
      shutdownDelaySeconds: seconds(60),
      // A surplus must last this long before a node is cordoned (Cluster Autoscaler's
      // scale-down-unneeded-time idea); bench/scale.ts chose the default.
      cordonAfterSeconds: seconds(180),
      // Extra slots kept above the buffer before cordoning, in new nodes' worth: off by default,
      // so the buffer is what the user set.
      cordonHeadroomNodes: z.number().min(0).max(4).default(0),
      // Removals at most this many nodes (or share of the managed nodes) per pass and per hour.
      disruptionBudget: z
        .strictObject({
          nodesPerPass: nodeBudget.default('10%'),
          nodesPerHour: nodeBudget.default('50%'),
        })
        .prefault({}),
      // The buffer follows demand: at least the game servers that arrive within one node
      // provisioning time (shared/scale/demand.ts).
      demand: z
        .strictObject({
          enabled: z.boolean().default(true),
          windowSeconds: z.number().int().min(60).default(900),
          burstWindowSeconds: z.number().int().min(60).default(86_400),
          provisionSeconds: z.number().int().min(1).default(240),
        })
        .prefault({}),
      nodePool: nodePool.prefault({ type: 'none' }),
      // Draining berth's cordoned nodes by game state (shared/scale/eviction.ts, drain.ts;
      // docs/game-state.md): ready game servers moved per pass (0: never), a forced node
      // lifetime such as Karpenter's expireAfter (0: none), the longest session assumed until
      // sessions are measured.
      drain: z
        .strictObject({
          evictionsPerPass: z.number().int().min(0).max(1000).default(10),
          nodeLifetimeSeconds: seconds(0),
          longestSessionSeconds: z.number().int().min(60).default(3600),
        })
        .prefault({}),
      // Autoscaler protection on game-server pods by game state (shared/scale/protection.ts):
      // named after Agones' eviction.safe; "off" leaves pods' annotations alone.
      protection: z.enum(['OnUpgrade', 'Always', 'Never', 'off']).default('OnUpgrade'),
      // Multi-session game servers (shared/scale/game-state.ts, docs/game-state.md): the Agones
      // Counter (or, with no Counter of that name, the List) a server counts its sessions in.
      // A count above zero holds players; the room below capacity counts toward the buffer.
      // `sessionLabel`: the GameServer label the matchmaker's "Allocated with room" selector
      // requires "true"; berth sets it "false" on the counted servers of nodes it cordons.
      gameState: z
        .strictObject({
          counter: agonesCounterName.optional(),
          sessionLabel: gameServerLabelKey.optional(),
        })
        .refine((g) => g.sessionLabel === undefined || g.counter !== undefined, {
          message:
            'sessionLabel needs counter: name the Counter the multi-session servers count matches in, or remove sessionLabel',
          path: ['sessionLabel'],
        })
        .prefault({}),
    })
    .prefault({}),
  eni: z
    .strictObject({
      intervalSeconds: seconds(60),
      // `prefix`: /28 prefixes (16 addresses per EC2 call and per ENI slot) on Nitro nodes,
      // single addresses while a subnet has no free /28; `ip`: single secondary addresses.
      // Absent means `DEFAULT_POOL_MODE` (shared/eni/policy.ts), applied where pools are sized.
      mode: z.enum(['ip', 'prefix']).optional(),
      minIdle: z.number().int().min(0).default(2),
      maxIdle: z.number().int().min(0).default(8),
      cooldownSeconds: seconds(60),
      stickySeconds: seconds(300),
    })
    .prefault({}),
  // Public fronts per game server (shared/fronts/, docs/fronts.md): a pool of Network Load
  // Balancers whose listener ports are exclusive values, and a Global Accelerator custom routing
  // endpoint group whose destination port range is one host port range, kept for it alone.
  fronts: z
    .strictObject({
      nlb: z
        .strictObject({
          loadBalancers: z.array(nlbArn).max(100).default([]),
          listenerPorts: portRangeText.prefault('10000-59999'),
          placement: z.enum(['balanced', 'fill-first']).default('balanced'),
          // `per-game-server`: a listener claimed at each game server's CREATE and made at its
          // binding. `slots`: a listener per host port of `range` on each game node, made and
          // registered when the node joins, so a binding needs no ELB call (docs/fronts.md).
          mode: z.enum(['per-game-server', 'slots']).default('per-game-server'),
          // The host port range whose every port is a slot on each game node (slots mode).
          range: z.string().min(1).optional(),
          // What each target group checks: never a UDP game port, which answers no check (a
          // group whose targets all fail fails open). By default kube-proxy's health endpoint on
          // the node (`--healthz-bind-address` 0.0.0.0:10256, which Cilium's kube-proxy
          // replacement serves too).
          healthCheck: z
            .strictObject({
              protocol: z.enum(['TCP', 'HTTP']).default('HTTP'),
              port: z.number().int().min(1).max(65535).default(10256),
              path: z
                .string()
                .regex(/^\/[\x21-\x7e]{0,1023}$/, 'a path starts with / and has no spaces')
                .default('/healthz'),
            })
            .prefault({}),
        })
        .optional(),
      accelerator: z
        .strictObject({
          endpointGroupArn: acceleratorArn,
          range: z.string().min(1),
        })
        .optional(),
    })
    .prefault({}),
  settle: z
    .strictObject({
      // Never 0: a value must not be freed before the apiserver has had time to commit. At most
      // what keeps the release promises under the settle step's schedule (settle-schedule.ts).
      delaySeconds: z
        .number()
        .int()
        .min(1, {
          error: (issue) =>
            `${String(issue.input)} is out of range ${SETTLE_DELAY_RANGE}: values are freed only after the apiserver commits, so 0 is not allowed`,
        })
        .max(MAX_SETTLE_DELAY_SECONDS, {
          error: (issue) =>
            `${String(issue.input)} is out of range ${SETTLE_DELAY_RANGE}: the settle step first looks this long after the review, and a value given back must be free within ${FREED_AFTER_COMMIT_SECONDS} s of its commit`,
        })
        .default(5),
    })
    .prefault({}),
});

/** berth's validated configuration, with CIDRs and port ranges already parsed. */
export type BerthConfig = z.output<typeof configSchema>;
/** The scale pass's section. */
export type ScaleConfig = BerthConfig['scale'];
/** The ENI pool section. */
export type EniConfig = BerthConfig['eni'];
/** The node pool berth grows and shrinks. */
export type NodePoolConfig = ScaleConfig['nodePool'];

/**
 * Validates a parsed JSON document. Throws ConfigError listing every problem, one per line, each
 * starting with the key path: the schema's, then the checks across fields (which run whatever
 * else is wrong, so a fix never uncovers a second round), then unknown keys.
 */
export function parseConfig(document: unknown): BerthConfig {
  // No document is every default; a document of null is a mistake, reported as one.
  const given = document === undefined ? {} : document;
  const result = configSchema.safeParse(given, { reportInput: true });
  const crossField = crossFieldProblems(given);
  if (result.success && crossField.length === 0) return result.data;
  const issues = result.success ? [] : primaryIssues(result.error.issues);
  const unknown = issues.filter((issue) => issue.code === 'unrecognized_keys');
  const problems = [
    ...issues.filter((issue) => issue.code !== 'unrecognized_keys').map(describeIssue),
    ...crossField,
    ...unknown.flatMap(describeIssue),
  ];
  throw new ConfigError(problems.flatMap((line) => line.split('\n')));
}

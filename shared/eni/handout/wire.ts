/**
 * What berth and a node's berth-cni say to each other when the node hands addresses out itself,
 * so pods start without a berth call while the node has a free address: the node's set, as
 * berth's node API answers it, and the node's report of its use, as its agent (or, with no free
 * address, the plugin) sends it. Both sides parse with the schemas here, so a field is written
 * once.
 */
import { z } from 'zod';

/**
 * One address of the node's set, as berth records it. `free`: the node may hand it out; `held`:
 * a pod holds it the earlier way (one berth call per pod) or EC2 is taking it back; `wanted`:
 * berth wants it back, so the node hands it out no more and returns it once no container holds
 * it (a prefix only whole).
 */
export type AddressState = 'free' | 'held' | 'wanted';

const address = z.object({
  ip: z.string(),
  eniId: z.string(),
  deviceIndex: z.number().int().min(0).optional(),
  macAddress: z.string().optional(),
  /** The /28 the address belongs to (prefix mode); returned only whole. */
  prefix: z.string().optional(),
  /**
   * When berth recorded the address: an address the node returned comes back only as a new
   * record (assigned to the instance again), never as the one it returned.
   */
  createdAt: z.number(),
  state: z.enum(['free', 'held', 'wanted']),
});

/** One address of a node's set. */
export type SetAddress = z.infer<typeof address>;

const nodeSet = z.object({
  node: z.string(),
  /** When berth read the set (epoch ms, its clock): a node keeps the newest it was given. */
  asOf: z.number(),
  /** The subnet of the node's addresses, and its gateway (the VPC router). */
  subnetCidr: z.string(),
  gateway: z.string(),
  /** How long a released address rests before the node hands it out again. */
  cooldownSeconds: z.number().min(0),
  /** How long an address released by a pod stays that pod's first choice on the node. */
  stickySeconds: z.number().min(0),
  addresses: z.array(address),
});

/** A node's set, as berth's node API answers it. */
export type NodeSet = z.infer<typeof nodeSet>;

const report = z.strictObject({
  /** Addresses a container holds on the node, and since when (epoch ms, the node's clock). */
  leased: z.array(z.strictObject({ ip: z.string(), since: z.number() })).max(1024),
  /** Addresses no container holds, and when their last holder let them go (0: never held). */
  rested: z.array(z.strictObject({ ip: z.string(), at: z.number() })).max(1024),
  /**
   * Wanted addresses the node has stopped handing out and found empty, by the record it was
   * given (`createdAt`): berth may take these back through EC2.
   */
  returned: z.array(z.strictObject({ ip: z.string(), createdAt: z.number() })).max(1024),
  /** The node has no free address: grow its set now. */
  refill: z.boolean().default(false),
});

/** What a node reports of its use. */
export type NodeReport = z.infer<typeof report>;

/** Parses a node's set; undefined when the answer is not one. */
export function parseNodeSet(value: unknown): NodeSet | undefined {
  const parsed = nodeSet.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** Parses a report; the problems, each naming its field, when it is not one. */
export function parseNodeReport(
  value: unknown,
): { readonly report: NodeReport } | { readonly problems: string } {
  const parsed = report.safeParse(value);
  if (parsed.success) return { report: parsed.data };
  return {
    problems: parsed.error.issues
      .map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`)
      .join('; '),
  };
}

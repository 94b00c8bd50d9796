/** The parsed command line, and what each command is. */
import type { LocalOptions } from '../shared/app/local-options.js';

/** Parsed command line, shared by every command: the local host's settings and each command's flags. */
export interface CliOptions extends LocalOptions {
  readonly command: string;
  /** The config file given, for messages. */
  readonly configFile?: string;
  readonly profile?: string;
  readonly json: boolean;
  readonly once: boolean;
  readonly dryRun: boolean;
  readonly verbose: boolean;
  readonly local: boolean;
  readonly url?: string;
  readonly stack?: string;
  readonly caFile?: string;
  /** `manifests --cni`: the CNI plugin's DaemonSet instead of the webhook. */
  readonly cni: boolean;
  /** `manifests --cni-nodes`: the nodes that run berth-cni (default: `scale.nodeSelector`). */
  readonly cniNodes?: string;
  /** `manifests --fail-open pods`: the pod webhook lets pods through while berth does not answer. */
  readonly failOpen?: string;
  /** `manifests --delete`: what `kubectl delete -f -` needs to remove berth, webhooks first. */
  readonly delete?: boolean;
  /** `status --clusters`: the capacity view of every cluster instead of the usage report. */
  readonly capacity: boolean;
  /** `status --holder`: a cluster IP, a port, or `namespace/name`. */
  readonly holder?: string;
  /** `fronts --add-nlb`: a Network Load Balancer to add to the pool. */
  readonly addNlb?: string;
  /** `forget-cluster NAME`: the cluster whose items go. */
  readonly forget?: string;
  /** `forget-cluster --yes`: delete, not only list. */
  readonly yes: boolean;
  /** `sim`: the simulated day. */
  readonly sim?: SimFlags;
}

/** The flags of `berth sim`, checked. */
export interface SimFlags {
  readonly hours: number;
  readonly speed: number;
  readonly seed: number;
  readonly nodes: number;
  readonly sessionsPerMinute: number;
  readonly scenario: string;
  /** Whether berth's scale pass runs (`--no-scale` turns it off). */
  readonly scale: boolean;
}

/** One command. */
export type Command = (options: CliOptions) => Promise<number>;

/**
 * What the web view (`/ui`) shows: the status report (exclusive ranges with their use, host port
 * ranges with their lowest and highest use count, ENI pools) and every host port's use count,
 * for the heat map. Read-only; the page polls it.
 */
import type { RangeUsage } from '../allocation/usage.js';
import { hostPortRangeUsage } from '../hostports/allocator.js';
import type { RangeCounts } from '../hostports/store.js';
import type { StatusReport } from '../status/report.js';

/** One host port range as the heat map draws it: the count of port `first + i` at `counts[i]`. */
export interface HostPortHeat {
  readonly name: string;
  readonly first: number;
  readonly counts: readonly number[];
}

/**
 * Game servers counted by the state berth reads of them (shared/scale/game-state.ts): ready ones
 * hold no players and may be moved; reserved (Agones `Reserved`) and allocated ones are never
 * moved. Every state the reader calls allocated that is not `Reserved` counts as allocated.
 */
export interface UiGameStates {
  readonly ready: number;
  readonly reserved: number;
  readonly allocated: number;
}

/** A mark drawn on a node (cordoned, draining, joining...): its kind for styling, its words. */
export interface UiBadge {
  readonly kind: string;
  readonly text: string;
}

/** A node as the view draws it: a box filled with its game servers. */
export interface UiNode {
  readonly name: string;
  readonly cpuMillis: number;
  readonly usedCpuMillis: number;
  readonly gameServers: number;
  /** Its game servers by state, as berth reads them. */
  readonly gameStates: UiGameStates;
  readonly cordoned: boolean;
  /** Being removed: berth's scale pass has committed to releasing its instance. */
  readonly draining: boolean;
  /** On its way: registered, not Ready yet (booting, its kubelet and network starting). */
  readonly joining: boolean;
  /** Its marks, in the order drawn (node-view.ts decides them). */
  readonly badges: readonly UiBadge[];
}

/** berth's EC2 calls against the account's budget. */
export interface UiEc2Calls {
  readonly calls: number;
  readonly mutatingCalls: number;
  readonly throttled: number;
  /** Mutating calls in each of the last minutes, oldest first. */
  readonly mutatingPerMinute: readonly number[];
  readonly mutatingBudgetPerMinute: number;
}

/**
 * What a cluster the server can see adds to the view: its nodes, the pods waiting for one, and
 * the invariants checked so far (`berth sim` checks them as it runs).
 */
export interface UiClusterView {
  readonly nodes: readonly UiNode[];
  /** The game servers of every node drawn, by state: the fleet's totals. */
  readonly gameStates: UiGameStates;
  readonly pendingGameServers: number;
  /** Nodes asked for and not registered yet (the pool grew; the instances are booting). */
  readonly nodesOnTheirWay?: number;
  /** Running pods whose sandbox waits for an address (berth's pool is empty and cannot grow). */
  readonly waitingForIp?: number;
  /** What the cluster waited for admission lately, in ms. */
  readonly admissionMs?: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly invariants?: { readonly checks: number; readonly violations: readonly string[] };
  /** The last passes run against it, newest last. */
  readonly passes?: readonly {
    readonly kind: string;
    readonly atHours: number;
    readonly summary: string;
  }[];
  readonly ec2?: UiEc2Calls;
}

/** The page's data. */
export interface UiState extends StatusReport {
  /** Epoch ms of the reading: the page turns successive readings into rates. */
  readonly at: number;
  readonly hostPorts: readonly HostPortHeat[];
  readonly clusterView?: UiClusterView;
  /**
   * Values this server allocated since it started (added by the HTTP layer, which hears every
   * decision): the chart's allocations per second, which net growth of the ranges is not.
   */
  readonly allocations?: number;
}

/**
 * Everything the page shows, from one reading: the status without its host port ranges, and
 * each host port range's counts, from which both their usage and the heat map come (one read of
 * the counts serves both).
 */
export function uiStateOf(
  status: Omit<StatusReport, 'ranges'> & { readonly ranges: readonly RangeUsage[] },
  hostPorts: readonly RangeCounts[],
  at: number,
): UiState {
  return {
    ...status,
    ranges: [
      ...status.ranges,
      ...hostPorts.map(({ range, counts, foreign }) => hostPortRangeUsage(range, counts, foreign)),
    ],
    at,
    hostPorts: hostPorts.map(({ range, counts }) => ({
      name: range.name,
      first: range.first,
      counts: [...counts],
    })),
  };
}

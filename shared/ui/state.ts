/**
 * What the web view (`/ui`) shows, read in one go: the status report (exclusive ranges with
 * their use, host port ranges with their lowest and highest use count, ENI pools) and every host
 * port's use count, for the heat map. Read-only; the page polls it.
 */
import type { StatusReport } from '../app/runtime.js';
import type { HostPortRange } from '../hostports/spec.js';
import type { HostPortStore } from '../hostports/store.js';

/** One host port range as the heat map draws it: the count of port `first + i` at `counts[i]`. */
export interface HostPortHeat {
  readonly name: string;
  readonly first: number;
  readonly counts: readonly number[];
}

/** A node as the view draws it: a box filled with its game servers. */
export interface UiNode {
  readonly name: string;
  readonly cpuMillis: number;
  readonly usedCpuMillis: number;
  readonly gameServers: number;
  readonly cordoned: boolean;
}

/**
 * What a cluster the server can see adds to the view: its nodes, the pods waiting for one, and
 * the invariants checked so far (`berth sim` checks them as it runs).
 */
export interface UiClusterView {
  readonly nodes: readonly UiNode[];
  readonly pendingGameServers: number;
  /** What the cluster waited for admission lately, in ms. */
  readonly admissionMs?: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly invariants?: { readonly checks: number; readonly violations: readonly string[] };
  /** The last passes run against it, newest last. */
  readonly passes?: readonly {
    readonly kind: string;
    readonly atHours: number;
    readonly summary: string;
  }[];
}

/** The page's data. */
export interface UiState extends StatusReport {
  /** Epoch ms of the reading: the page turns successive readings into rates. */
  readonly at: number;
  readonly hostPorts: readonly HostPortHeat[];
  readonly clusterView?: UiClusterView;
}

/** What a reading needs. */
export interface UiStateDeps {
  readonly status: () => Promise<StatusReport>;
  readonly hostPortRanges: readonly HostPortRange[];
  readonly hostPortStore: Pick<HostPortStore, 'readCounts'>;
  readonly now: () => number;
}

/** Reads everything the page shows. */
export async function readUiState(deps: UiStateDeps): Promise<UiState> {
  const at = deps.now();
  const [status, heat] = await Promise.all([
    deps.status(),
    Promise.all(
      deps.hostPortRanges.map(async (range): Promise<HostPortHeat> => {
        const { counts } = await deps.hostPortStore.readCounts(range);
        return { name: range.name, first: range.first, counts: [...counts] };
      }),
    ),
  ]);
  return { ...status, at, hostPorts: heat };
}

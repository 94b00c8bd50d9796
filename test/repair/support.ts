/** Builders and a DynamoDB Local environment for repair tests. */

import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { ExclusiveAllocator, rangeKey } from '../../shared/allocation/allocator.js';
import { recordHostPorts } from '../../shared/hostports/allocator.js';
import type { HeldPort } from '../../shared/hostports/store.js';
import type { ClusterApi } from '../../shared/k8s/cluster-api.js';
import { parseCidr } from '../../shared/net/ip.js';
import { blockIndexOf, slotOf } from '../../shared/net/offset.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import {
  clusterIpRange,
  hostPortRange,
  nodePortRange,
  type ValueRange,
} from '../../shared/net/value-range.js';
import { toHostPortRange } from '../../shared/repair/host-port-diff.js';
import {
  type RepairDeps,
  type RepairOptions,
  type RepairRanges,
  type RepairSummary,
  runRepairPass,
} from '../../shared/repair/pass.js';
import type { HostPortRepairStore, RepairAllocationStore } from '../../shared/repair/store.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../../shared/store/dynamo-leak-ledger.js';
import { DynamoLease } from '../../shared/store/dynamo-lease.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';
import { ALLOCATION_ID_ANNOTATION } from '../../shared/vocabulary/labels.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { freshTable } from '../support/dynamo.js';

const cidr = (text: string): ValueRange => {
  const block = parseCidr(text);
  if (!block) throw new Error(`bad test CIDR ${text}`);
  return clusterIpRange(block);
};
const ports = (text: string): PortRange => parsePortRange(text) as PortRange;

/** Small ranges: a /24 of cluster IPs, 100 node ports, 100 host ports. */
export const RANGES: RepairRanges = {
  clusterIps: [cidr('10.100.0.0/24')],
  nodePorts: nodePortRange(ports('30000-30099')),
  hostPorts: [hostPortRange('default', ports('7000-7099'))],
};
export const IPS = RANGES.clusterIps[0] as ValueRange;
export const NODE_PORTS = RANGES.nodePorts;
export const HOST_PORTS = RANGES.hostPorts[0] as ValueRange;

/** The clock of every test: fixed, so counters and records are reproducible. */
export const NOW = Date.parse('2036-03-01T12:00:00Z');

/**
 * How long before the clock the env's fixtures were admitted: past the commit window, so their
 * objects are stored or refused by the time a pass lists, and a pass may suspect what they hold.
 */
export const SETTLED_MS = COMMIT_WINDOW_MS + 1_000;

let seq = 0;

/** Everything one test's passes run on: a fresh table, real adapters, a hand fake of the cluster. */
export interface RepairEnv {
  readonly cluster: FakeClusterApi;
  readonly allocations: DynamoAllocationStore;
  readonly hostPorts: DynamoHostPortStore;
  readonly ledger: DynamoLeakLedger;
  readonly lease: DynamoLease;
  /** Admits as if `SETTLED_MS` before the clock: what it claims is old enough to suspect. */
  readonly allocator: ExclusiveAllocator;
  /** Admits at the clock: what it claims may belong to an object the apiserver has not stored. */
  readonly admitting: ExclusiveAllocator;
  readonly clock: { now: number };
  /** New adapter objects on the same table, as a Lambda cold start would make them. */
  coldStart(): RepairEnv;
  /** One pass; `deps` replaces any dependency (a failing store, another cluster). */
  pass(deps?: Partial<RepairDeps>, options?: Partial<RepairOptions>): Promise<RepairSummary>;
  /** The holder of a value, or undefined when it is free. */
  holderOf(range: ValueRange, value: string): Promise<string | undefined>;
  /** Use counts of the host port range, by port. */
  hostCounts(): Promise<Map<number, number>>;
  /** Writes a pod's record and uses as the webhook would have, `SETTLED_MS` before the clock. */
  commitPod(id: string, namespace: string, name: string, held: readonly HeldPort[]): Promise<void>;
  /** Writes a pod's record and uses as the webhook does, at the clock (its pod maybe unstored). */
  admitPod(id: string, namespace: string, name: string, held: readonly HeldPort[]): Promise<void>;
}

/** A new environment on a fresh table and cluster name. */
export async function repairEnv(): Promise<RepairEnv> {
  const { client, tableName } = await freshTable();
  const name = `r${seq++}`;
  const cluster = new FakeClusterApi();
  const clock = { now: NOW };
  const make = (): RepairEnv => {
    const target = { client, tableName, cluster: name };
    const allocations = new DynamoAllocationStore(target);
    const hostPorts = new DynamoHostPortStore(target);
    const ledger = new DynamoLeakLedger({ ...target, sleep: async () => {} });
    const lease = new DynamoLease({ ...target, now: () => clock.now });
    const allocatorAt = (offset: number) =>
      new ExclusiveAllocator({
        store: allocations,
        random: () => 0.5,
        now: () => clock.now - offset,
      });
    const allocator = allocatorAt(SETTLED_MS);
    const recordPod =
      (offset: number) =>
      (id: string, namespace: string, podName: string, held: readonly HeldPort[]) =>
        recordHostPorts(hostPorts, {
          id,
          pod: { kind: 'Pod', namespace, name: podName, generateName: '' },
          ports: held,
          createdAt: clock.now - offset,
        });
    const env: RepairEnv = {
      cluster,
      allocations,
      hostPorts,
      ledger,
      lease,
      allocator,
      admitting: allocatorAt(0),
      clock,
      coldStart: make,
      pass: (deps = {}, options = {}) =>
        runRepairPass(
          {
            cluster,
            allocations,
            hostPorts,
            ledger,
            lease,
            now: () => clock.now,
            holder: `test-${seq++}`,
            ...deps,
          },
          { ranges: RANGES, leakGracePasses: 3, pageSize: 2, ...options },
        ),
      async holderOf(range, value) {
        const offset = range.offsetOf(value);
        if (offset === undefined) throw new Error(`${value} is not in ${range.name}`);
        const index = blockIndexOf(offset);
        for await (const block of allocations.scanBlocks(rangeKey(range), index, index)) {
          return block.holders.get(slotOf(offset));
        }
        return undefined;
      },
      async hostCounts() {
        const range = toHostPortRange(HOST_PORTS);
        const { counts } = await hostPorts.readCounts(range);
        const byPort = new Map<number, number>();
        counts.forEach((count, offset) => {
          if (count !== 0) byPort.set(range.first + offset, count);
        });
        return byPort;
      },
      commitPod: recordPod(SETTLED_MS),
      admitPod: recordPod(0),
    };
    return env;
  };
  return make();
}

/**
 * Runs passes with `leakGracePasses: 1` from `admitted` to just inside the commit window, and
 * checks that none frees or starts counting anything: what admission claimed may be an object
 * the apiserver has not stored yet.
 */
export async function expectNoSuspectsWithinCommitWindow(
  env: RepairEnv,
  admitted: number,
): Promise<void> {
  for (const after of [0, 1_000, 30_000, 60_000, COMMIT_WINDOW_MS - 1_000]) {
    env.clock.now = admitted + after;
    const summary = await env.pass({}, { leakGracePasses: 1 });
    expect(summary.released).toBe(0);
    expect(summary.countdowns).toEqual([]);
  }
  expect(await env.ledger.list()).toEqual(new Map());
}

/** What a test Service looks like. */
export interface ServiceOptions {
  readonly namespace?: string;
  readonly uid?: string;
  readonly id?: string;
  readonly type?: string;
  readonly clusterIPs?: readonly string[];
  readonly ports?: readonly {
    name?: string;
    port?: number;
    protocol?: string;
    nodePort?: number;
  }[];
  readonly healthCheckNodePort?: number;
  readonly deleting?: boolean;
}

/** A Service as the API lists it; `id` sets `berth.dev/allocation-id`. */
export function service(name: string, options: ServiceOptions = {}): V1Service {
  const ips = options.clusterIPs ?? [];
  return {
    metadata: {
      name,
      namespace: options.namespace ?? 'default',
      uid: options.uid ?? `uid-${name}`,
      ...(options.id ? { annotations: { [ALLOCATION_ID_ANNOTATION]: options.id } } : {}),
      ...(options.deleting ? { deletionTimestamp: new Date(NOW) } : {}),
    },
    spec: {
      type: options.type ?? (options.ports?.some((p) => p.nodePort) ? 'NodePort' : 'ClusterIP'),
      ...(ips.length > 0 ? { clusterIP: ips[0], clusterIPs: [...ips] } : {}),
      ports: (options.ports ?? []).map((p, i) => ({
        name: p.name ?? `p${i}`,
        port: p.port ?? 80 + i,
        protocol: p.protocol ?? 'TCP',
        ...(p.nodePort ? { nodePort: p.nodePort } : {}),
      })),
      ...(options.healthCheckNodePort ? { healthCheckNodePort: options.healthCheckNodePort } : {}),
    },
  };
}

/** A game-server pod carrying allocation id `id` and container host ports. */
export function gamePod(
  name: string,
  id: string | undefined,
  hostPorts: readonly { name: string; hostPort: number; protocol?: string }[],
  options: { namespace?: string; phase?: string; deleting?: boolean } = {},
): V1Pod {
  return {
    metadata: {
      name,
      namespace: options.namespace ?? 'default',
      uid: `uid-${name}`,
      ...(id ? { annotations: { [ALLOCATION_ID_ANNOTATION]: id } } : {}),
      ...(options.deleting ? { deletionTimestamp: new Date(NOW) } : {}),
    },
    spec: {
      containers: [
        {
          name: 'game',
          ports: hostPorts.map((p) => ({
            name: p.name,
            containerPort: p.hostPort,
            hostPort: p.hostPort,
            protocol: p.protocol ?? 'UDP',
          })),
        },
      ],
    },
    status: { phase: options.phase ?? 'Running' },
  };
}

/** A Service-owner reference for `allocator.assign`. */
export const svcOwner = (name: string, namespace = 'default') => ({
  kind: 'Service' as const,
  namespace,
  name,
});

/** A `RepairAllocationStore` that forwards to `inner` and throws `error` on the `after`-th call of `method`. */
export function failingAllocations(
  inner: RepairAllocationStore,
  method: 'claim' | 'transfer' | 'release' | 'putOwner',
  after: number,
  error: Error,
): RepairAllocationStore {
  let calls = 0;
  const trip = () => {
    calls++;
    if (calls >= after) throw error;
  };
  return {
    getOwner: (id) => inner.getOwner(id),
    putOwner: async (record, version) => {
      if (method === 'putOwner') trip();
      return inner.putOwner(record, version);
    },
    deleteOwner: (id, version) => inner.deleteOwner(id, version),
    listOwners: () => inner.listOwners(),
    scanBlocks: (range, from, to) => inner.scanBlocks(range, from, to),
    claim: async (range, offset, owner, claimedAt) => {
      if (method === 'claim') trip();
      return inner.claim(range, offset, owner, claimedAt);
    },
    transfer: async (range, offset, from, to) => {
      if (method === 'transfer') trip();
      return inner.transfer(range, offset, from, to);
    },
    release: async (range, offset, owner) => {
      if (method === 'release') trip();
      return inner.release(range, offset, owner);
    },
  };
}

/** A ClusterApi whose `listServices` runs `during` after its first page is read. */
export function clusterDuring(inner: ClusterApi, during: () => Promise<void>): ClusterApi {
  let ran = false;
  return {
    getNode: (n) => inner.getNode(n),
    getPod: (ns, n) => inner.getPod(ns, n),
    getService: (ns, n) => inner.getService(ns, n),
    listNodes: (o) => inner.listNodes(o),
    listPods: (o) => inner.listPods(o),
    scaleDeployment: (ns, n, r) => inner.scaleDeployment(ns, n, r),
    patchPod: (ns, n, p) => inner.patchPod(ns, n, p),
    evictPod: (ns, n, p) => inner.evictPod(ns, n, p),
    listGameServers: (o) => inner.listGameServers(o),
    deleteGameServer: (ns, n, p) => inner.deleteGameServer(ns, n, p),
    patchGameServer: (ns, n, p) => inner.patchGameServer(ns, n, p),
    getKarpenterNodePool: (n) => inner.getKarpenterNodePool(n),
    async *listServices(o) {
      for await (const item of inner.listServices(o)) {
        if (!ran) {
          ran = true;
          await during();
        }
        yield item;
      }
      if (!ran) {
        ran = true;
        await during();
      }
    },
    patchNode: (n, p) => inner.patchNode(n, p),
    deleteNode: (n) => inner.deleteNode(n),
    createEvent: (e) => inner.createEvent(e),
  };
}

/** The Events recorded on the fake, as `reason kind/namespace/name`. */
export function eventsOf(cluster: FakeClusterApi): string[] {
  return cluster.events
    .map(
      (e) =>
        `${e.reason} ${e.involvedObject.kind}/${e.involvedObject.namespace}/${e.involvedObject.name}`,
    )
    .sort();
}

/** A typed host port, as records hold them. */
export const held = (
  name: string,
  port: number,
  protocol: HeldPort['protocol'] = 'UDP',
): HeldPort => ({
  name,
  range: 'default',
  port,
  protocol,
});

export type { HostPortRepairStore };

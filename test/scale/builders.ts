/** Kubernetes objects for scale tests, with only the fields the scale pass reads. */
import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { parseConfig, type ScaleConfig } from '../../shared/config/schema.js';
import type { AgonesGameServer } from '../../shared/k8s/cluster-api.js';
import { CORDONED_AT, GAME_SERVER_LABEL } from '../../shared/vocabulary/labels.js';

/**
 * A `scale` section for pass tests: cordons a surplus at once, removes without a budget, keeps
 * the buffer set (demand off); `scale` adds to it or replaces.
 */
export function passConfig(scale: Record<string, unknown> = {}): ScaleConfig {
  return parseConfig({
    scale: {
      shutdownDelaySeconds: 60,
      cordonAfterSeconds: 0,
      disruptionBudget: { nodesPerPass: '100%', nodesPerHour: '100%' },
      demand: { enabled: false },
      ...scale,
    },
  }).scale;
}

/** Base clock of the scale tests: 2026-01-01T00:00:00Z. */
export const T0 = Date.UTC(2026, 0, 1);

/** Shape of a test node. */
export interface NodeSpec {
  /** Allocatable CPU (a Kubernetes quantity); capacity is 10% more. */
  readonly cpu?: string;
  readonly ready?: boolean;
  readonly unschedulable?: boolean;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
  readonly createdAtMs?: number;
  readonly providerId?: string;
  readonly deleting?: boolean;
}

/** A managed node (label role=game-server) with allocatable CPU `cpu` (default 4). */
export function node(name: string, spec: NodeSpec = {}): V1Node {
  const cpu = spec.cpu ?? '4';
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '1',
      labels: spec.labels ?? { role: 'game-server' },
      ...(spec.annotations ? { annotations: { ...spec.annotations } } : {}),
      creationTimestamp: new Date(spec.createdAtMs ?? T0 - 24 * 3_600_000),
      ...(spec.deleting ? { deletionTimestamp: new Date(T0) } : {}),
    },
    spec: {
      ...(spec.unschedulable ? { unschedulable: true } : {}),
      providerID:
        spec.providerId ?? `aws:///us-east-1a/i-${name.replace(/[^0-9a-f]/g, '').padEnd(8, '0')}`,
    },
    status: {
      capacity: { cpu: `${Number.parseFloat(cpu) * 1.1}` },
      allocatable: { cpu },
      conditions: [{ type: 'Ready', status: spec.ready === false ? 'False' : 'True' }],
    },
  };
}

/** A node berth cordoned at `atMs`. */
export function berthCordoned(name: string, atMs: number, spec: NodeSpec = {}): V1Node {
  return node(name, {
    ...spec,
    unschedulable: true,
    annotations: { [CORDONED_AT]: new Date(atMs).toISOString(), ...spec.annotations },
  });
}

/** Shape of a test pod. */
export interface PodSpec {
  /** Bound node; absent means unscheduled. */
  readonly node?: string;
  /** CPU request of its one container (default 100m). */
  readonly cpu?: string;
  readonly limit?: string;
  readonly game?: boolean;
  readonly phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  readonly namespace?: string;
  readonly initContainers?: readonly V1Container[];
}

/** A pod; a game server unless `game: false`. */
export function pod(name: string, spec: PodSpec = {}): V1Pod {
  const game = spec.game ?? true;
  return {
    metadata: {
      name,
      namespace: spec.namespace ?? 'games',
      labels: game ? { [GAME_SERVER_LABEL]: 'true' } : { app: 'daemon' },
    },
    spec: {
      ...(spec.node ? { nodeName: spec.node } : {}),
      containers: [
        {
          name: 'main',
          resources: {
            requests: { cpu: spec.cpu ?? '100m' },
            ...(spec.limit ? { limits: { cpu: spec.limit } } : {}),
          },
        },
      ],
      ...(spec.initContainers ? { initContainers: [...spec.initContainers] } : {}),
    },
    status: { phase: spec.phase ?? (spec.node ? 'Running' : 'Pending') },
  };
}

/** `count` running game servers on `nodeName`. */
export function gameServers(nodeName: string, count: number, cpu = '100m'): V1Pod[] {
  return Array.from({ length: count }, (_, i) =>
    pod(`${nodeName}-game-${i}`, { node: nodeName, cpu }),
  );
}

/** A ready or allocated game server that says so with `berth.dev/state`, owned by a ReplicaSet. */
export function statefulServer(
  name: string,
  nodeName: string,
  state: 'ready' | 'allocated',
  createdAtMs?: number,
): V1Pod {
  const base = pod(name, { node: nodeName });
  return {
    ...base,
    metadata: {
      ...base.metadata,
      uid: `uid-${name}`,
      resourceVersion: '7',
      annotations: { 'berth.dev/state': state },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'fleet', uid: 'rs', controller: true },
      ],
      ...(createdAtMs !== undefined ? { creationTimestamp: new Date(createdAtMs) } : {}),
    },
  };
}

/** An Agones game server: its pod and its GameServer in `state`, in a fleet unless `standalone`. */
export function agonesServer(
  name: string,
  nodeName: string,
  state: string,
  options: { readonly standalone?: boolean } = {},
): { pod: V1Pod; gameServer: AgonesGameServer } {
  const base = pod(name, { node: nodeName });
  return {
    pod: {
      ...base,
      metadata: {
        ...base.metadata,
        uid: `pod-${name}`,
        ownerReferences: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServer',
            name,
            uid: `gs-${name}`,
            controller: true,
          },
        ],
      },
    },
    gameServer: {
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      metadata: {
        name,
        namespace: 'games',
        uid: `gs-${name}`,
        resourceVersion: '42',
        ...(options.standalone
          ? {}
          : {
              ownerReferences: [
                {
                  apiVersion: 'agones.dev/v1',
                  kind: 'GameServerSet',
                  name: 'fleet-abc',
                  uid: 'gss',
                  controller: true,
                },
              ],
            }),
      },
      status: { state },
    },
  };
}

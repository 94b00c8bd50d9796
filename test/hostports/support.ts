/** Helpers for host port tests: real AdmissionReview requests, patch application, a seeded random. */

import { randomBytes } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { AdmissionHandler } from '../../shared/admission/dispatch.js';
import { hostPortRangesOf, podAdmission } from '../../shared/admission/pods.js';
import type { AdmissionVerdict } from '../../shared/admission/response.js';
import { type AdmissionRequest, parseAdmissionReview } from '../../shared/admission/review.js';
import { type BerthConfig, parseConfig } from '../../shared/config/schema.js';
import type { HostPortRange } from '../../shared/hostports/model.js';
import { CapacityMeter } from '../../shared/store/capacity.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import {
  ALLOCATION_ID_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { applyPatch } from '../../sim/fakes/json-patch.js';
import { freshTable } from '../support/dynamo.js';

/** A pod as tests build it: plain JSON. */
export type Pod = Record<string, unknown>;

let uidSeq = 0;

/** Options of one admission request. */
export interface ReviewOptions {
  readonly operation?: 'CREATE' | 'DELETE' | 'UPDATE';
  readonly dryRun?: boolean;
  readonly namespace?: string;
}

/** A `pods` AdmissionReview request as the apiserver sends it, parsed by berth's own parser. */
export function podRequest(pod: Pod, options: ReviewOptions = {}): AdmissionRequest {
  const operation = options.operation ?? 'CREATE';
  const metadata = (pod.metadata ?? {}) as Record<string, unknown>;
  return parseAdmissionReview({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${uidSeq++}`,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      ...(typeof metadata.name === 'string' ? { name: metadata.name } : {}),
      namespace: options.namespace ?? (metadata.namespace as string | undefined) ?? 'default',
      operation,
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
      object: operation === 'DELETE' ? null : pod,
      oldObject: operation === 'CREATE' ? null : pod,
      dryRun: options.dryRun ?? false,
    },
  });
}

/** What a test pod looks like. */
export interface GamePodOptions {
  readonly name?: string;
  readonly generateName?: string;
  readonly namespace?: string;
  readonly containers?: readonly Record<string, unknown>[];
  readonly initContainers?: readonly Record<string, unknown>[];
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
  readonly affinity?: Record<string, unknown>;
}

/** A pod opting in with `ports` as its `berth.dev/ports` annotation (a string is used verbatim). */
export function gamePod(ports: unknown, options: GamePodOptions = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(options.generateName
        ? { generateName: options.generateName }
        : { name: options.name ?? 'gs' }),
      namespace: options.namespace ?? 'default',
      annotations: {
        [PORTS_ANNOTATION]: typeof ports === 'string' ? ports : JSON.stringify(ports),
        ...options.annotations,
      },
      ...(options.labels ? { labels: options.labels } : {}),
    },
    spec: {
      containers: options.containers ?? [{ name: 'game', image: 'example/game:1' }],
      ...(options.initContainers ? { initContainers: options.initContainers } : {}),
      ...(options.affinity ? { affinity: options.affinity } : {}),
    },
  };
}

/** A game server pod as admission left it for its binding: its allocation id, one container. */
export function admittedGameServer(name: string, namespace = 'default'): V1Pod {
  return {
    metadata: {
      name,
      namespace,
      annotations: { [ALLOCATION_ID_ANNOTATION]: 'abcdefghijklmnopqrst' },
    },
    spec: { containers: [{ name: 'game', image: 'example/game:1' }] },
  };
}

/** The pod after the verdict's patch; fails the test when the verdict is a denial. */
export function patched(pod: Pod, verdict: AdmissionVerdict): Pod {
  if (!verdict.allowed) throw new Error(`denied ${verdict.code}: ${verdict.message}`);
  return applyPatch(pod, verdict.patch ?? []);
}

/** `berth.dev/host-ports` of a patched pod. */
export function hostPortsOf(pod: Pod): Record<string, number> {
  const annotations = (pod.metadata as { annotations?: Record<string, string> }).annotations ?? {};
  return JSON.parse(annotations[HOST_PORTS_ANNOTATION] ?? 'null') as Record<string, number>;
}

/** `berth.dev/allocation-id` of a patched pod. */
export function allocationIdOf(pod: Pod): string | undefined {
  const annotations = (pod.metadata as { annotations?: Record<string, string> }).annotations ?? {};
  return annotations[ALLOCATION_ID_ANNOTATION];
}

/** The container ports of container `index` of a patched pod. */
export function containerPorts(pod: Pod, index = 0): Record<string, unknown>[] {
  const containers = (pod.spec as { containers: { ports?: Record<string, unknown>[] }[] })
    .containers;
  return containers[index]?.ports ?? [];
}

/** The env of container `index` of a patched pod. */
export function containerEnv(pod: Pod, index = 0): { name: string; value?: string }[] {
  const containers = (pod.spec as { containers: { env?: { name: string; value?: string }[] }[] })
    .containers;
  return containers[index]?.env ?? [];
}

/** Asserts the verdict is a denial and returns its message. */
export function denial(verdict: AdmissionVerdict, code: number): string {
  expect(verdict.allowed).toBe(false);
  if (verdict.allowed) return '';
  expect(verdict.code).toBe(code);
  return verdict.message;
}

/** A pod handler over a fresh table, with the store and ranges for inspection. */
export interface PodHarness {
  readonly handler: AdmissionHandler;
  readonly store: DynamoHostPortStore;
  readonly config: BerthConfig;
  readonly ranges: ReadonlyMap<string, HostPortRange>;
  /** Use counts of a range by port number. */
  counts(range?: string): Promise<Map<number, number>>;
  /** Sends a pod CREATE and returns the patched pod (throws on denial). */
  create(pod: Pod, options?: ReviewOptions): Promise<Pod>;
}

let clusterSeq = 0;

/** A fresh table, store and handler with the given host port ranges. */
export async function podHarness(
  hostPortRanges: Record<string, string> = { default: '7000-8000' },
  random: () => number = Math.random,
  table?: Awaited<ReturnType<typeof freshTable>>,
): Promise<PodHarness> {
  // A shared table is fine: every harness gets its own cluster prefix.
  const { client, tableName } = table ?? (await freshTable());
  const store = new DynamoHostPortStore({
    client,
    tableName,
    cluster: `c${clusterSeq++}`,
    meter: new CapacityMeter(),
  });
  const config = parseConfig({ hostPortRanges });
  const ranges = new Map(hostPortRangesOf(config).map((r) => [r.name, r]));
  const handler = podAdmission({
    config,
    store,
    random,
    randomBytes: (size) => new Uint8Array(randomBytes(size)),
    now: () => 1_700_000_000_000,
  });
  return {
    handler,
    store,
    config,
    ranges,
    async counts(name = 'default') {
      const range = ranges.get(name);
      if (!range) throw new Error(`no range ${name}`);
      const { counts } = await store.readCounts(range);
      return new Map(counts.map((c, i) => [range.first + i, c]));
    },
    async create(pod, options) {
      return patched(pod, await handler(podRequest(pod, options)));
    },
  };
}

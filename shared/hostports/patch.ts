/**
 * Reading the parts of a pod host ports concern, and the JSON patch that gives a pod its ports
 *. Pure. Container `ports` and `env` are written as whole arrays with `add`
 * (which replaces an existing member), so the patch applies whether or not they exist and a
 * re-invoked webhook replaces its own entries instead of duplicating them.
 */
import { frontEnvVarName } from '../fronts/front-spec.js';
import {
  DO_NOT_DISRUPT,
  FRONTS_ANNOTATION,
  FRONTS_READY_ANNOTATION,
  GAME_SERVER_LABEL,
  HOST_PORTS_ANNOTATION,
  HOSTNAME_LABEL,
  SAFE_TO_EVICT,
  SCHEDULING_ANNOTATION,
} from '../vocabulary/labels.js';
import { type JsonPatchOperation, pointer, setMetadataEntries } from '../vocabulary/patch.js';
import {
  type ContainerRef,
  containerPortsOf,
  envVarsOf,
  isAllocated,
  type PodContainers,
  type PortSpec,
  portsOf,
} from './spec.js';
import type { HeldPort } from './store.js';

/** The annotations that keep Cluster Autoscaler and Karpenter from draining a live game. */
export const EVICTION_PROTECTION: Readonly<Record<string, string>> = {
  [SAFE_TO_EVICT]: 'false',
  [DO_NOT_DISRUPT]: 'true',
};

type JsonObject = Readonly<Record<string, unknown>>;

function asObject(value: unknown): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

function asArray(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The pod's containers and sidecar init containers, for spec validation. */
export function podContainersOf(pod: JsonObject): PodContainers {
  const spec = asObject(pod.spec);
  const nameOf = (c: unknown): string => {
    const name = asObject(c)?.name;
    return typeof name === 'string' ? name : '';
  };
  return {
    containers: asArray(spec?.containers).map(nameOf),
    initContainers: asArray(spec?.initContainers).map((c) => ({
      name: nameOf(c),
      sidecar: asObject(c)?.restartPolicy === 'Always',
    })),
  };
}

/** A container port entry as the patch writes it. */
interface PortEntry {
  /** Absent on a block's ports after its first. */
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol: 'TCP' | 'UDP';
  readonly hostPort?: number;
}

/** The host port a spec ends up with (a block: its first): allocated, given, or none (None). */
function hostPortOf(spec: PortSpec, allocated: ReadonlyMap<string, number>): number | undefined {
  if (spec.portPolicy === 'Static') return spec.hostPort;
  if (spec.portPolicy === 'None') return undefined;
  return allocated.get(spec.name);
}

/** Spec name → the first host port held under it (a block's ports are consecutive). */
function firstPorts(held: readonly HeldPort[]): Map<string, number> {
  const first = new Map<string, number>();
  for (const h of held) first.set(h.name, Math.min(h.port, first.get(h.name) ?? h.port));
  return first;
}

/**
 * The container port entries of a spec: one per protocol (TCPUDP: `name-tcp` and `name-udp`),
 * for each port of a block, the first named as a single port is and the others unnamed
 * (Kubernetes port names are optional, at most 15 characters and unique in the pod, so names per
 * port would cut the names a block may have). The container port is the host port for
 * Passthrough and in a `hostNetwork` pod (whose container ports are its host ports), else the
 * spec's containerPort; a block's ports count up from both.
 */
function entriesOf(
  spec: PortSpec,
  hostPort: number | undefined,
  hostNetwork: boolean,
): PortEntry[] {
  const containerPort =
    spec.portPolicy === 'Passthrough' || (hostNetwork && hostPort !== undefined)
      ? hostPort
      : spec.containerPort;
  // A None port without a containerPort (Agones asks for one only for Dynamic and Static) has
  // nothing to declare on the container.
  if (containerPort === undefined && spec.portPolicy === 'None') return [];
  if (containerPort === undefined) throw new RangeError(`port ${spec.name} has no container port`);
  return Array.from({ length: portsOf(spec) }, (_, i) =>
    containerPortsOf(spec.name, spec.protocol).map(
      (port): PortEntry => ({
        ...(i === 0 ? { name: port.name } : {}),
        containerPort: containerPort + i,
        protocol: port.protocol,
        ...(hostPort !== undefined ? { hostPort: hostPort + i } : {}),
      }),
    ),
  ).flat();
}

/** Kubernetes defaults a container port's protocol to TCP. */
function protocolOf(existing: JsonObject): string {
  return typeof existing.protocol === 'string' ? existing.protocol : 'TCP';
}

function sameEntry(existing: JsonObject, entry: PortEntry): boolean {
  return (
    (entry.name !== undefined && existing.name === entry.name) ||
    (existing.containerPort === entry.containerPort && protocolOf(existing) === entry.protocol)
  );
}

/**
 * Existing entries with berth's entries merged in: an entry with the same name, or the same
 * containerPort and protocol, is replaced in place (kube validation would reject the duplicate);
 * the others are appended in spec order.
 */
function mergePorts(existing: readonly unknown[], entries: readonly PortEntry[]): unknown[] {
  const placed = new Set<PortEntry>();
  const merged: unknown[] = [];
  for (const item of existing) {
    const object = asObject(item);
    const match = object ? entries.find((e) => sameEntry(object, e)) : undefined;
    if (match === undefined) merged.push(item);
    else if (!placed.has(match)) {
      placed.add(match);
      merged.push(match);
    }
  }
  return [...merged, ...entries.filter((e) => !placed.has(e))];
}

/**
 * The host port numbers the pod holds outside berth's specs: every container port entry's
 * `hostPort`, and in a `hostNetwork` pod every `containerPort` too (its container ports are host
 * ports), except the entries berth's patch puts its own in place of (a spec port's name, or,
 * outside hostNetwork, a spec's containerPort and protocol). berth never hands the pod one of
 * them: the apiserver refuses a host port listed twice, and a hostNetwork pod's own entry would
 * be replaced by berth's.
 */
export function ownHostPorts(pod: JsonObject, specs: readonly PortSpec[]): Set<number> {
  const spec = asObject(pod.spec);
  const hostNetwork = spec?.hostNetwork === true;
  const names = new Set(specs.flatMap((s) => [s.name, `${s.name}-tcp`, `${s.name}-udp`]));
  const replaced = (entry: JsonObject) =>
    (typeof entry.name === 'string' && names.has(entry.name)) ||
    (!hostNetwork &&
      specs.some(
        (s) =>
          s.containerPort === entry.containerPort &&
          (s.protocol === 'TCPUDP' || s.protocol === protocolOf(entry)),
      ));
  const held = new Set<number>();
  for (const container of [...asArray(spec?.containers), ...asArray(spec?.initContainers)]) {
    for (const item of asArray(asObject(container)?.ports)) {
      const entry = asObject(item);
      if (entry === undefined || replaced(entry)) continue;
      if (typeof entry.hostPort === 'number') held.add(entry.hostPort);
      if (hostNetwork && typeof entry.containerPort === 'number') held.add(entry.containerPort);
    }
  }
  return held;
}

function mergeEnv(
  existing: readonly unknown[],
  vars: readonly { name: string; value: string }[],
): unknown[] {
  const byName = new Map(vars.map((v) => [v.name, v]));
  const merged = existing.map((item) => {
    const name = asObject(item)?.name;
    const replacement = typeof name === 'string' ? byName.get(name) : undefined;
    if (replacement) byName.delete(replacement.name);
    return replacement ?? item;
  });
  return [...merged, ...byName.values()];
}

function containerAt(pod: JsonObject, ref: ContainerRef): JsonObject | undefined {
  return asObject(asArray(asObject(pod.spec)?.[ref.field])[ref.index]);
}

/** The preferred podAffinity that packs game servers onto few nodes (Agones' Packed). */
export const PACKING_POD_AFFINITY = {
  preferredDuringSchedulingIgnoredDuringExecution: [
    {
      weight: 100,
      podAffinityTerm: {
        topologyKey: HOSTNAME_LABEL,
        labelSelector: { matchLabels: { [GAME_SERVER_LABEL]: 'true' } },
      },
    },
  ],
} as const;

/**
 * name → hostPort for the `berth.dev/host-ports` annotation (a block: `{ port, count }`, its first
 * port and size): Static included, None absent.
 */
function hostPortsByName(
  specs: readonly PortSpec[],
  held: readonly HeldPort[],
): Record<string, number | { port: number; count: number }> {
  const allocated = firstPorts(held);
  const byName: Record<string, number | { port: number; count: number }> = {};
  for (const spec of specs) {
    const port = hostPortOf(spec, allocated);
    if (port === undefined) continue;
    byName[spec.name] = spec.count === undefined ? port : { port, count: spec.count };
  }
  return byName;
}

/** Everything the patch needs besides the pod. */
export interface PodPatchInput {
  readonly specs: readonly PortSpec[];
  readonly held: readonly HeldPort[];
  readonly allocationId: string;
  readonly allocationIdAnnotation: string;
  /**
   * The address a player dials per fronted port, where it is known at CREATE (an NLB listener):
   * `BERTH_FRONT_<NAME>` in the container and the `berth.dev/fronts` annotation. Present (empty
   * if need be) whenever a port asks for a front; absent for a pod with none.
   */
  readonly fronts?: ReadonlyMap<string, string>;
}

/** The JSON patch giving `pod` its ports, env vars, annotations, label and packing affinity. */
export function buildPodPatch(pod: JsonObject, input: PodPatchInput): JsonPatchOperation[] {
  const { specs, held } = input;
  const allocated = firstPorts(held);
  const hostNetwork = asObject(pod.spec)?.hostNetwork === true;
  const operations: JsonPatchOperation[] = [];

  const byContainer = new Map<string, { ref: ContainerRef; specs: PortSpec[] }>();
  for (const spec of specs) {
    const key = `${spec.container.field}/${spec.container.index}`;
    const group = byContainer.get(key) ?? { ref: spec.container, specs: [] };
    group.specs.push(spec);
    byContainer.set(key, group);
  }
  for (const { ref, specs: own } of byContainer.values()) {
    const container = containerAt(pod, ref);
    const entries = own.flatMap((s) => entriesOf(s, hostPortOf(s, allocated), hostNetwork));
    operations.push({
      op: 'add',
      path: pointer('spec', ref.field, ref.index, 'ports'),
      value: mergePorts(asArray(container?.ports), entries),
    });
    const vars = own.flatMap((s) => {
      const port = hostPortOf(s, allocated);
      if (port === undefined) return [];
      // The port, then a block's count.
      const values = [String(port), String(portsOf(s))];
      const front = input.fronts?.get(s.name);
      return [
        ...envVarsOf(s).map((name, i) => ({ name, value: values[i] ?? '' })),
        ...(front === undefined ? [] : [{ name: frontEnvVarName(s.name), value: front }]),
      ];
    });
    if (vars.length > 0) {
      operations.push({
        op: 'add',
        path: pointer('spec', ref.field, ref.index, 'env'),
        value: mergeEnv(asArray(container?.env), vars),
      });
    }
  }

  const metadata = asObject(pod.metadata);
  const own = asObject(metadata?.annotations) ?? {};
  // No other scaler may evict a live game: Cluster Autoscaler and Karpenter are told so, unless
  // the pod already says what it wants.
  const protections = Object.fromEntries(
    Object.entries(EVICTION_PROTECTION).filter(([key]) => own[key] === undefined),
  );
  operations.push(
    ...setMetadataEntries(metadata, 'annotations', {
      [input.allocationIdAnnotation]: input.allocationId,
      [HOST_PORTS_ANNOTATION]: JSON.stringify(hostPortsByName(specs, held)),
      // Written whenever the pod asks for a front, empty until the binding knows more: a copied
      // manifest's annotation (another game server's address) never survives the CREATE.
      // Not ready until the fronts pass sees every front route, whatever a copy carried.
      ...(input.fronts === undefined
        ? {}
        : {
            [FRONTS_ANNOTATION]: JSON.stringify(Object.fromEntries(input.fronts)),
            [FRONTS_READY_ANNOTATION]: 'false',
          }),
      ...protections,
    }),
    // When the pod had no metadata, the annotations operation has just added it.
    ...setMetadataEntries(metadata ?? {}, 'labels', { [GAME_SERVER_LABEL]: 'true' }),
  );

  const annotations = asObject(metadata?.annotations);
  const affinity = asObject(asObject(pod.spec)?.affinity);
  if (annotations?.[SCHEDULING_ANNOTATION] !== 'Distributed' && affinity?.podAffinity == null) {
    operations.push(
      affinity === undefined
        ? {
            op: 'add',
            path: pointer('spec', 'affinity'),
            value: { podAffinity: PACKING_POD_AFFINITY },
          }
        : {
            op: 'add',
            path: pointer('spec', 'affinity', 'podAffinity'),
            value: PACKING_POD_AFFINITY,
          },
    );
  }
  return operations;
}

/**
 * Whether the pod's container port entries carry exactly the recorded host ports: the test that
 * tells a re-invoked webhook (which sees its own earlier patch applied) from a copied annotation.
 */
export function podCarriesHostPorts(
  pod: JsonObject,
  specs: readonly PortSpec[],
  held: readonly HeldPort[],
): boolean {
  const allocatedSpecs = specs.filter((s) => isAllocated(s.portPolicy));
  if (allocatedSpecs.reduce((sum, s) => sum + portsOf(s), 0) !== held.length) return false;
  const first = firstPorts(held);
  return allocatedSpecs.every((spec) => {
    const own = held.filter((h) => h.name === spec.name);
    const port = first.get(spec.name);
    if (port === undefined || own.length !== portsOf(spec)) return false;
    if (own.some((h) => h.range !== spec.range || h.protocol !== spec.protocol)) return false;
    const ports = asArray(containerAt(pod, spec.container)?.ports).map(asObject);
    return containerPortsOf(spec.name, spec.protocol).every(({ name }) =>
      ports.some((p) => p?.name === name && p.hostPort === port),
    );
  });
}

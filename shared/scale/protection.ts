/**
 * Autoscaler protection that follows game state. Cluster Autoscaler never scales down a node
 * whose pod says `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`, and Karpenter never
 * voluntarily disrupts one with `karpenter.sh/do-not-disrupt: "true"`. The scale pass sets both
 * on allocated game servers and, by `scale.protection` (named after Agones' `eviction.safe`,
 * agones.dev "Controlling Disruption"; googleforgames/agones v1.38.0
 * `pkg/cloudproduct/eviction/eviction.go`), on ready ones:
 *
 * | mode        | allocated, reserved          | ready                                          |
 * |-------------|------------------------------|------------------------------------------------|
 * | `Never`     | safe-to-evict false, do-not-disrupt true | the same: nothing moves them but berth   |
 * | `OnUpgrade` | the same                     | safe-to-evict false, no do-not-disrupt         |
 * | `Always`    | the same                     | safe-to-evict true, no do-not-disrupt          |
 * | `off`       | left alone                   | left alone                                     |
 *
 * `OnUpgrade` (the default) does what Agones' OnUpgrade does for Cluster Autoscaler (it never
 * scales a game server's node down) while leaving ready servers to node upgrades, Karpenter's
 * drift and expiry, and berth's own drain. Pure: the patches; the pass applies them, each guarded
 * by the pod's `resourceVersion` so a pod that changed since the listing is left for the next
 * pass. Agones records allocation on the GameServer, not the pod, so that guard cannot see it: a
 * server allocated between the listing and the patch may lose do-not-disrupt for one pass, which
 * is why no mode but `Always` takes safe-to-evict off a ready server.
 */
import type { ScaleConfig } from '../config/schema.js';
import { DO_NOT_DISRUPT, SAFE_TO_EVICT } from '../vocabulary/labels.js';
import { annotationPath, type JsonPatchOperation } from '../vocabulary/patch.js';
import type { DrainPolicy } from './drain.js';
import type { GameState } from './game-state.js';
import type { ScaleNote } from './plan.js';
import type { ClusterSnapshot, GameServerView } from './snapshot.js';

/** One of the protection modes of `scale.protection`. */
export type ProtectionMode = ScaleConfig['protection'];

/** The protection annotations a game server should carry: a value, or absent (undefined). */
export interface Protection {
  readonly [SAFE_TO_EVICT]: string | undefined;
  readonly [DO_NOT_DISRUPT]: string | undefined;
}

const PROTECTED: Protection = { [SAFE_TO_EVICT]: 'false', [DO_NOT_DISRUPT]: 'true' };

/** What a game server in `state` should carry under `mode`; undefined when berth leaves it. */
export function protectionFor(state: GameState, mode: ProtectionMode): Protection | undefined {
  if (mode === 'off') return undefined;
  if (state === 'allocated' || mode === 'Never') return PROTECTED;
  return {
    [SAFE_TO_EVICT]: mode === 'Always' ? 'true' : 'false',
    [DO_NOT_DISRUPT]: undefined,
  };
}

/**
 * The JSON patch that brings a game server's annotations to `wanted`, guarded by its
 * `resourceVersion`; empty when it carries them already.
 */
export function protectionPatch(gs: GameServerView, wanted: Protection): JsonPatchOperation[] {
  const changes: JsonPatchOperation[] = [];
  for (const key of [SAFE_TO_EVICT, DO_NOT_DISRUPT] as const) {
    const value = wanted[key];
    const current = gs.annotations[key];
    if (value === current) continue;
    changes.push(
      value === undefined
        ? { op: 'remove', path: annotationPath(key) }
        : { op: 'add', path: annotationPath(key), value },
    );
  }
  if (changes.length === 0) return [];
  return [
    ...(gs.resourceVersion !== undefined
      ? [{ op: 'test' as const, path: '/metadata/resourceVersion', value: gs.resourceVersion }]
      : []),
    ...(gs.hasAnnotationMap
      ? []
      : [{ op: 'add' as const, path: '/metadata/annotations', value: {} }]),
    ...changes,
  ];
}

/** Describes a protection for a reason line. */
export function describeProtection(wanted: Protection): string {
  return [SAFE_TO_EVICT, DO_NOT_DISRUPT]
    .map((key) => {
      const value = wanted[key as keyof Protection];
      return value === undefined ? `no ${key}` : `${key}: "${value}"`;
    })
    .join(', ');
}

/** One protection patch the pass applies, with what it sets. */
export interface ProtectionPatch {
  readonly target: GameServerView;
  readonly patch: readonly JsonPatchOperation[];
  readonly reason: string;
}

/**
 * The protection patches of a pass: every live game server on a managed node whose state berth
 * reads from its fleet (a server that says nothing of its state keeps the annotations it has)
 * and whose annotations disagree with that state, by name, at most `protectionsPerPass` (the
 * rest wait a pass). They are not scale actions: the pass applies them after its actions and
 * reports them as notes, as it does Events.
 */
export function planProtection(
  snapshot: ClusterSnapshot,
  policy: DrainPolicy,
): { readonly patches: ProtectionPatch[]; readonly notes: ScaleNote[] } {
  const patches: ProtectionPatch[] = [];
  const notes: ScaleNote[] = [];
  if (policy.protection === 'off') return { patches, notes };
  const managed = new Set(snapshot.nodes.map((n) => n.name));
  const servers = snapshot.gameServers
    .filter((gs) => managed.has(gs.node) && !gs.deleting && gs.source !== 'default')
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  let left = 0;
  for (const gs of servers) {
    const wanted = protectionFor(gs.state, policy.protection);
    if (wanted === undefined) continue;
    const patch = protectionPatch(gs, wanted);
    if (patch.length === 0) continue;
    if (patches.length >= policy.protectionsPerPass) {
      left += 1;
      continue;
    }
    patches.push({
      target: gs,
      patch,
      reason: `${gs.state} (${gs.detail}), protection ${policy.protection}: ${describeProtection(wanted)}`,
    });
  }
  if (left > 0) {
    notes.push({
      reason: `${left} more game server(s) to protect: at most ${policy.protectionsPerPass} a pass`,
    });
  }
  return { patches, notes };
}

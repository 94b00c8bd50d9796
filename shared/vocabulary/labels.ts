/**
 * Every well-known label and annotation berth reads or writes, in one place (as Karpenter keeps
 * `pkg/apis/v1/labels.go`): a key spelled twice can drift, and a reader of the product should
 * find in one file what berth puts on, or expects of, the objects it touches. Tag keys of the AWS
 * resources berth makes are not here: they are EC2 and ELB vocabulary, kept with those ports.
 */

// berth's own annotations.

/** Stable id of an object's allocations; a re-invoked webhook that sees it does not allocate again. */
export const ALLOCATION_ID_ANNOTATION = 'berth.dev/allocation-id';
/** The annotation a pod opts in to host ports with: its port specs, JSON. */
export const PORTS_ANNOTATION = 'berth.dev/ports';
/** JSON object name → hostPort (a block: `{ port, count }`) of every spec port but None ones. */
export const HOST_PORTS_ANNOTATION = 'berth.dev/host-ports';
/** `Distributed` turns the packing podAffinity off. */
export const SCHEDULING_ANNOTATION = 'berth.dev/scheduling';
/** The address a player dials per fronted port: JSON, port name → `host:port`. */
export const FRONTS_ANNOTATION = 'berth.dev/fronts';
/**
 * `"true"` once every front of the game server routes (its NLB target serves, its accelerator
 * destination is allowed); `"false"` from its CREATE until then.
 */
export const FRONTS_READY_ANNOTATION = 'berth.dev/fronts-ready';
/** The node a game-server pod is bound to. */
export const NODE_ANNOTATION = 'berth.dev/node';
/** The bound node's address, chosen by `nodeAddressTypes` precedence. */
export const ADDRESS_ANNOTATION = 'berth.dev/address';
/** The annotation that makes a pod's IP sticky without a StatefulSet owner. */
export const STICKY_IP_ANNOTATION = 'berth.dev/sticky-ip';
/** The annotation a game server of any fleet sets on its own pod: `ready` or `allocated`. */
export const GAME_STATE_ANNOTATION = 'berth.dev/state';
/** RFC 3339 time berth cordoned the node; its presence makes the cordon berth's. */
export const CORDONED_AT = 'berth.dev/cordoned-at';
/**
 * RFC 3339 time berth committed to removing the node. Written (compare-and-swap) before the
 * instance is released, so a pass that dies half-way is finished by the next one.
 */
export const REMOVAL_STARTED_AT = 'berth.dev/removal-started-at';
/** The cluster a berth webhook configuration sends its reviews for. */
export const CLUSTER_ANNOTATION = 'berth.dev/cluster';

// berth's own labels.

/** Marks game-server pods: the packing affinity selects it, the scale and fronts passes list by it. */
export const GAME_SERVER_LABEL = 'berth.dev/game-server';
/** Label on every placeholder pod of the scale buffer. */
export const PLACEHOLDER_LABEL = 'berth.dev/placeholder';
/**
 * The namespace label that takes a namespace out of berth's path (`berth.dev/bypass=true`): the
 * operator's switch for a bad day, set and removed with one `kubectl label` each.
 */
export const BYPASS_LABEL = 'berth.dev/bypass';

// Kubernetes' well-known labels.

/** The node's hostname, the topology key that packs game servers onto one node. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
/** The namespace's own name, which the apiserver sets on every namespace. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
/** The recommended label naming the application an object belongs to. */
export const APP_NAME_LABEL = 'app.kubernetes.io/name';
/** The recommended label naming the larger application an object is part of. */
export const APP_PART_OF_LABEL = 'app.kubernetes.io/part-of';
/** The recommended label naming an object's role within its application. */
export const APP_COMPONENT_LABEL = 'app.kubernetes.io/component';

// The autoscalers' opt-outs, which berth both writes on game servers and honours on nodes.

/** Cluster Autoscaler's per-pod opt-out of scale-down. */
export const SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict';
/** Cluster Autoscaler's per-node opt-out of scale-down; berth honours it. */
export const SCALE_DOWN_DISABLED = 'cluster-autoscaler.kubernetes.io/scale-down-disabled';
/** Karpenter's opt-out of voluntary disruption, on a pod or a node (one key for both). */
export const DO_NOT_DISRUPT = 'karpenter.sh/do-not-disrupt';
/** The Karpenter NodePool a node was launched for. */
export const KARPENTER_NODE_POOL_LABEL = 'karpenter.sh/nodepool';

// The VPC CNI's labels (aws/amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml at v1.23.0).

/** The label aws-node's DaemonSet selects its pods by (`k8s-app: aws-node`). */
export const K8S_APP_LABEL = 'k8s-app';
/** The CPU architecture label the kubelet sets, which aws-node's node affinity reads. */
export const ARCH_LABEL = 'kubernetes.io/arch';
/** The operating system label the kubelet sets, which aws-node's node affinity reads. */
export const OS_LABEL = 'kubernetes.io/os';

// EKS Auto Mode's node labels.

/** The label Auto Mode sets on its nodes. */
export const COMPUTE_TYPE_LABEL = 'eks.amazonaws.com/compute-type';
/** The node's Auto Mode NodeClass (group `eks.amazonaws.com`, kind `NodeClass`). */
export const NODE_CLASS_LABEL = 'eks.amazonaws.com/nodeclass';

// Game-server fleets' own keys.

/**
 * The GameServer annotation Agones sets, RFC 3339, at every allocation
 * (googleforgames/agones `pkg/gameserverallocations/allocator.go`, `LastAllocatedAnnotationKey`).
 */
export const AGONES_LAST_ALLOCATED = 'agones.dev/last-allocated';
/**
 * The GameServer label a multi-session server's matchmaker selects "Allocated with room" on
 * (`scale.gameState.sessionLabel` by default): `"true"` takes more matches, `"false"` none.
 * berth sets it `"false"` on the nodes it cordons and `"true"` on those it uncordons. The key of
 * Agones' "GameServer Label Locking" example, which a game server also sets with
 * `SDK.SetLabel("gs-session-ready", ...)` (googleforgames/agones v1.56.0 `site/content/en/docs/
 * Integration Patterns/high-density-gameservers.md`).
 */
export const AGONES_SESSION_READY_LABEL = 'agones.dev/sdk-gs-session-ready';
/** `AGONES_SESSION_READY_LABEL`'s values: takes more matches, or none. */
export const SESSION_LABEL_VALUES = { open: 'true', closed: 'false' } as const;
/**
 * The fleet of an Agones GameServer, set by Agones on every GameServer of a Fleet and copied onto
 * its pod with the GameServer's other labels (agones.dev docs, "Allocation from a Fleet";
 * googleforgames/agones `pkg/apis/agones/v1/gameserver.go`, `podObjectMeta`).
 */
export const AGONES_FLEET_LABEL = 'agones.dev/fleet';
/**
 * The GameServerSet owning an OpenKruise Game pod (openkruise/kruise-game v1.0.0
 * `apis/v1alpha1/gameserverset_types.go`, `GameServerOwnerGssKey`).
 */
export const OKG_OWNER_GSS_LABEL = 'game.kruise.io/owner-gss';
/** OpenKruise Game's pod label mirroring the GameServer's `spec.opsState`. */
export const OKG_OPS_STATE_LABEL = 'game.kruise.io/gs-opsState';

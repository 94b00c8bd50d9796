/**
 * The Kubernetes calls berth makes, and only those (Karpenter's narrow-interface shape). The
 * adapter over `@kubernetes/client-node` implements it; domain tests use hand-written fakes.
 */
import type { V1Node, V1Pod, V1Service } from '@kubernetes/client-node';

import type { JsonPatchOperation } from '../admission/patch.js';

/** One RFC 6902 operation, as `patchNode` sends them. */
export type { JsonPatchOperation } from '../admission/patch.js';

/** A core/v1 Event berth records on an object it looked at. */
export interface ClusterEvent {
  readonly involvedObject: {
    readonly kind: 'Service' | 'Pod' | 'Node';
    readonly namespace?: string;
    readonly name: string;
    readonly uid?: string;
  };
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  /** The berth component that saw it, e.g. `berth-repair`. */
  readonly component: string;
}

/** Options of a paged list. */
export interface ListOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Items per page (limit/continue); lists are never fetched in one response. */
  readonly pageSize?: number;
}

/** What berth reads and changes in a cluster. Absent objects read as undefined. */
export interface ClusterApi {
  getNode(name: string): Promise<V1Node | undefined>;
  getPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  getService(namespace: string, name: string): Promise<V1Service | undefined>;
  listNodes(options?: ListOptions): AsyncIterable<V1Node>;
  listPods(options?: ListOptions): AsyncIterable<V1Pod>;
  listServices(options?: ListOptions): AsyncIterable<V1Service>;
  /** Applies a JSON patch; the `test` operations make it a compare-and-swap. */
  patchNode(name: string, patch: readonly JsonPatchOperation[]): Promise<V1Node>;
  /** Deletes the Node object; one already gone counts as deleted. */
  deleteNode(name: string): Promise<void>;
  createEvent(event: ClusterEvent): Promise<void>;
  /** Sets a Deployment's replicas through its `scale` subresource (the buffer's placeholders). */
  scaleDeployment(namespace: string, name: string, replicas: number): Promise<void>;
}

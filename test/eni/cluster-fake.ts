/** A hand-written `ClusterApi` fake for the ENI tests: nodes and pods in maps, calls recorded. */
import type { V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type {
  AgonesGameServer,
  ClusterApi,
  ClusterEvent,
  EvictionOutcome,
  ListOptions,
} from '../../shared/k8s/cluster-api.js';
import type { JsonPatchOperation } from '../../shared/vocabulary/patch.js';

/** The cluster as the ENI domain sees it. */
export class FakeCluster implements ClusterApi {
  readonly nodes = new Map<string, V1Node>();
  readonly pods = new Map<string, V1Pod>();
  readonly calls: string[] = [];
  /** When set, listPods throws it (the API server is down). */
  listPodsError: Error | undefined;

  /** Adds a node backed by an EC2 instance. */
  addNode(name: string, instanceId: string, zone = 'us-east-1a', maxPods?: number): void {
    this.nodes.set(name, {
      metadata: { name },
      spec: { providerID: `aws:///${zone}/${instanceId}` },
      ...(maxPods === undefined ? {} : { status: { allocatable: { pods: String(maxPods) } } }),
    });
  }

  /** Adds (or replaces) a running pod bound to a node. */
  addPod(
    namespace: string,
    name: string,
    nodeName: string,
    extra: { statefulSet?: boolean; stickyAnnotation?: boolean; phase?: string } = {},
  ): void {
    this.pods.set(`${namespace}/${name}`, {
      metadata: {
        namespace,
        name,
        ...(extra.stickyAnnotation ? { annotations: { 'berth.dev/sticky-ip': 'true' } } : {}),
        ...(extra.statefulSet
          ? {
              ownerReferences: [
                { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'u-1' },
              ],
            }
          : {}),
      },
      spec: { nodeName, containers: [] },
      status: { phase: extra.phase ?? 'Running' },
    });
  }

  removePod(namespace: string, name: string): void {
    this.pods.delete(`${namespace}/${name}`);
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    this.calls.push(`getNode ${name}`);
    return this.nodes.get(name);
  }

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    this.calls.push(`getPod ${namespace}/${name}`);
    return this.pods.get(`${namespace}/${name}`);
  }

  async *listNodes(): AsyncIterable<V1Node> {
    this.calls.push('listNodes');
    yield* this.nodes.values();
  }

  async *listPods(options?: ListOptions): AsyncIterable<V1Pod> {
    this.calls.push(`listPods ${options?.fieldSelector ?? ''}`.trim());
    if (this.listPodsError) throw this.listPodsError;
    const node = /^spec\.nodeName=(.+)$/.exec(options?.fieldSelector ?? '')?.[1];
    for (const pod of this.pods.values()) {
      if (node === undefined || pod.spec?.nodeName === node) yield pod;
    }
  }

  async getService(): Promise<V1Service | undefined> {
    return undefined;
  }

  async *listServices(): AsyncIterable<V1Service> {
    yield* [];
  }

  async patchNode(name: string, _patch: readonly JsonPatchOperation[]): Promise<V1Node> {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  async deleteNode(name: string): Promise<void> {
    this.nodes.delete(name);
  }

  /** The ENI pools never scale a Deployment. */
  async scaleDeployment(): Promise<void> {
    throw new Error('the ENI fake cluster scales no Deployment');
  }

  /** The ENI pools touch no pod and no game server. */
  async patchPod(): Promise<V1Pod> {
    throw new Error('the ENI fake cluster patches no pod');
  }

  async evictPod(): Promise<EvictionOutcome> {
    throw new Error('the ENI fake cluster evicts no pod');
  }

  async *listGameServers(): AsyncIterable<AgonesGameServer> {}

  async deleteGameServer(): Promise<'deleted'> {
    throw new Error('the ENI fake cluster deletes no game server');
  }

  async getKarpenterNodePool(): Promise<undefined> {
    return undefined;
  }

  /** Events recorded, in order. */
  readonly events: ClusterEvent[] = [];

  async createEvent(event: ClusterEvent): Promise<void> {
    this.events.push(event);
  }
}

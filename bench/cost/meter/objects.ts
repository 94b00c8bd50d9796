/**
 * The reference cluster's game servers and Services, made from the manifests under examples/ and
 * kept in the Kubernetes API fake once admitted, and the admission reviews that carry them.
 */
import { readFile } from 'node:fs/promises';
import { loadAllYaml, type V1Pod, type V1Service } from '@kubernetes/client-node';
import { applyPatch, decodePatch } from '../../../sim/fakes/json-patch.js';
import { review } from '../../../sim/reviews.js';
import { ASSUMPTIONS, REFERENCE_FLEET } from '../fleet.js';
import { NAMESPACE, type World } from './world.js';

type Json = Record<string, unknown>;

/** The manifests under examples/, as kubectl would send them (plain JSON). */
async function example(file: string): Promise<Json> {
  const text = await readFile(new URL(`../../../examples/${file}`, import.meta.url), 'utf8');
  const [document] = JSON.parse(JSON.stringify(loadAllYaml(text))) as Json[];
  if (!document) throw new Error(`examples/${file} is empty`);
  return document;
}

/** Builds the reference cluster's pods and Services from examples/ and keeps them in the fake. */
export class ReferenceObjects {
  #pods = 0;
  #services = 0;

  private constructor(
    readonly world: World,
    readonly gameServer: Json,
    readonly lobby: Json,
  ) {}

  static async load(world: World): Promise<ReferenceObjects> {
    return new ReferenceObjects(
      world,
      await example('game-server.yaml'),
      await example('game-service.yaml'),
    );
  }

  /** The node the scheduler spreads the `index`-th game server to. */
  nodeFor(index: number): string {
    return this.world.nodes[index % this.world.nodes.length]?.name ?? 'game-node-000';
  }

  /** examples/game-server.yaml under a new name, at the fleet's CPU request. */
  newPod(): Json {
    const pod = structuredClone(this.gameServer) as Json & {
      metadata: Json;
      spec: { containers: Json[] };
    };
    pod.metadata.name = `match-${String(this.#pods++).padStart(6, '0')}`;
    pod.metadata.namespace = NAMESPACE;
    for (const container of pod.spec.containers) {
      container.resources = { requests: { cpu: REFERENCE_FLEET.gameServerCpu, memory: '512Mi' } };
    }
    return pod;
  }

  /** examples/game-service.yaml under a new name; one in five stays NodePort. */
  newService(): Json {
    const service = structuredClone(this.lobby) as Json & { metadata: Json; spec: Json };
    const index = this.#services++;
    service.metadata.name = `svc-${String(index).padStart(5, '0')}`;
    service.metadata.namespace = NAMESPACE;
    if (index % Math.round(1 / ASSUMPTIONS.nodePortShare.value) !== 0) {
      service.spec.type = 'ClusterIP';
    }
    return service;
  }

  podReview(
    operation: 'CREATE' | 'DELETE',
    pod: Json | V1Pod,
    options: { readonly dryRun?: boolean } = {},
  ) {
    const metadata = (pod as { metadata?: { name?: string } }).metadata;
    return review({
      resource: 'pods',
      operation,
      ...(options.dryRun ? { dryRun: true } : {}),
      namespace: NAMESPACE,
      name: metadata?.name ?? '',
      ...(operation === 'CREATE' ? { object: pod } : { oldObject: pod }),
    });
  }

  bindingReview(pod: V1Pod, node: string) {
    const { name, namespace } = pod.metadata ?? {};
    return review({
      resource: 'pods',
      subResource: 'binding',
      operation: 'CREATE',
      namespace: namespace ?? NAMESPACE,
      name: name ?? '',
      object: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name, namespace },
        target: { apiVersion: 'v1', kind: 'Node', name: node },
      },
    });
  }

  serviceReview(
    operation: 'CREATE' | 'UPDATE' | 'DELETE',
    object: Json | V1Service | undefined,
    oldObject?: Json | V1Service,
  ) {
    const named = (object ?? oldObject) as { metadata?: { name?: string } };
    return review({
      resource: 'services',
      operation,
      namespace: NAMESPACE,
      name: named.metadata?.name ?? '',
      ...(object ? { object } : {}),
      ...(oldObject ? { oldObject } : {}),
    });
  }

  /** Stores an admitted pod as the apiserver would, bound and running on `node`. */
  storePod(pod: Json, patch: string | undefined, node: string): V1Pod {
    const stored = applyPatch(pod, decodePatch(patch)) as V1Pod;
    stored.spec = { ...stored.spec, nodeName: node } as V1Pod['spec'];
    stored.status = { phase: 'Running' };
    return this.world.kube.addPod(stored);
  }

  /** Stores an admitted Service (a new one, or a new version of one). */
  storeService(service: Json | V1Service, patch: string | undefined): V1Service {
    return this.world.kube.addService(applyPatch(service, decodePatch(patch)) as V1Service);
  }
}

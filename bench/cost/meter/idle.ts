/**
 * The passes of a cluster with no game sessions: what a stack costs when nothing is played.
 *
 * With no game servers the scale pass keeps the node pool at what its buffer and `minNodes` ask
 * for (`idleGameNodes`), so the idle cluster is that many game nodes with their ENI pools and the
 * reference cluster's Services, in a world of its own (another cluster in the same table, its own
 * Kubernetes API fake and EC2 fake). Its ENI, scale and repair passes run through the same
 * function bodies as at fleet size; the difference between the two is what the passes cost per
 * game node, which the fleet's nodes follow, not the stack.
 */
import { admit } from '../../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../../shared/admission/review.js';
import { clusterAdmission } from '../../../shared/app/lambda-admission.js';
import { startKubeApiServer } from '../../../sim/fakes/kube-api-server.js';
import { seededRandom } from '../../../sim/random.js';
import { CLUSTER_SHARE, REFERENCE_CONFIG, REFERENCE_FLEET } from '../fleet.js';
import { createPools, meterEniPasses, wireEni } from './eni.js';
import { ReferenceObjects } from './objects.js';
import { meterPasses } from './passes.js';
import { Session } from './session.js';
import { buildWorld, TABLE, type WorldShape } from './world.js';

/**
 * Game nodes the scale pass keeps with no game server: enough for the buffer of ready game
 * servers, at least `minNodes` (shared/scale: the buffer is `bufferGameServers` with no demand
 * measured). Pure.
 */
export function idleGameNodes(scale: {
  readonly bufferGameServers: number;
  readonly minNodes: number;
  readonly gameServerCpuMillis: number;
}): number {
  const allocatable = Number.parseInt(REFERENCE_FLEET.node.allocatableCpu, 10);
  const perNode = Math.floor(allocatable / scale.gameServerCpuMillis);
  return Math.max(scale.minNodes, Math.ceil(scale.bufferGameServers / perNode));
}

/** Meters the idle cluster's passes into a session of their own, which it answers. */
export async function meterIdlePasses(base: Session): Promise<Session> {
  const { client, ledger } = base.world;
  const { scale } = base.world.config;
  const shape: WorldShape = {
    cluster: `${REFERENCE_CONFIG.cluster}-idle`,
    nodes: idleGameNodes(scale),
  };
  const kube = await startKubeApiServer();
  try {
    const world = await buildWorld(client, ledger, kube, base.log, shape);
    const session = new Session(world, base.functions, base.log);
    base.log(
      `  an idle cluster: ${shape.nodes} game node(s), no game servers, ${CLUSTER_SHARE.services} Services (set-up)...`,
    );
    // The Services through the webhook's admission, unmetered; their settle tasks are dropped
    // as the fleet-size set-up drops its own (the repair pass finds nothing releasing).
    const { runtime } = clusterAdmission({
      config: world.config,
      dynamo: client,
      tableName: TABLE,
      reader: world.cluster,
      queue: { submit: async () => {} },
      observers: {
        onSettleLost: () => {
          throw new Error('the idle cluster drops its settle tasks');
        },
        onDecision: () => {},
      },
      now: () => world.clocks.admission,
      random: seededRandom(97),
    });
    const objects = await ReferenceObjects.load(world);
    for (let i = 0; i < CLUSTER_SHARE.services; i++) {
      const service = objects.newService();
      const review = parseAdmissionReview(objects.serviceReview('CREATE', service));
      const { response } = await admit(review, runtime.admission);
      if (!response.allowed) throw new Error(`idle set-up denied: ${JSON.stringify(response)}`);
      objects.storeService(service, response.patch);
    }
    const eni = wireEni(world);
    await createPools(eni, world);
    await meterEniPasses(session, eni);
    const { scaleActions } = await meterPasses(session);
    // The idle cluster must be what the scale pass keeps with no game server, or the fixed bill
    // would price passes over nodes that would not be there (or miss some that would).
    if (scaleActions > 0) {
      throw new Error(
        `the scale pass acted on the idle cluster of ${shape.nodes} node(s): it keeps another size`,
      );
    }
    return session;
  } finally {
    await kube.stop();
  }
}

/**
 * The node IP function as the stack deploys it (functions/node-ips/handler.ts): each cluster's
 * ENI assignments under its routes, reachable only by the node roles listed for it, with the
 * background refills an assign asks for handed to the ENI function.
 */
import { clusterRoutes, type HttpHandler } from '../clusters/http-routes.js';
import { nodeCallerCheck } from '../clusters/node-callers.js';
import { lambdaSettings } from '../config/load.js';
import { createHttpApi, type NodeIpApi } from '../http/api.js';
import { eniRunner, nodeIpFault, sdkEc2Account } from './eni-pass.js';
import { lambdaPassContexts } from './lambda.js';
import { type Observability, unavailableRecorder } from './observability.js';
import { refillInvokers } from './refill-invoker.js';

/** One cluster's node IP API as the node IP function serves it (and the cost meter meters it). */
export function nodeIpsApi(
  nodeIps: NodeIpApi,
  { logger, metrics }: Pick<Observability, 'logger' | 'metrics'>,
): HttpHandler {
  return createHttpApi({
    healthy: async () => true,
    nodeIps,
    classify: nodeIpFault,
    // The table did not answer: a 503 the node agent retries, logged and alarmed as a 500 is.
    onUnavailable: unavailableRecorder(logger, metrics),
  });
}

/** The node IP API of every cluster of the Lambda environment. */
export function lambdaNodeIpsApi(observe: Observability): HttpHandler {
  const { logger, forCluster } = observe;
  const settings = lambdaSettings();
  // A single-cluster stack's refill events name no cluster, as before it could serve several.
  const several = settings.configs.length > 1;
  const account = sdkEc2Account(settings.region);
  const refills = refillInvokers(settings, (node, error) =>
    logger.warn('could not hand a background refill to the ENI function', { node, error }),
  );
  const apis = lambdaPassContexts(settings).map((context, config) =>
    nodeIpsApi(
      eniRunner(context, account).nodeIps(refills(several ? config.cluster : undefined)),
      observe,
    ),
  );
  const mayCall = nodeCallerCheck(settings.nodeIpsCallers);
  return clusterRoutes(apis, {
    // Only signed callers with the stack's grant get here: naming the clusters tells them nothing new.
    unknown: 'explain',
    onCluster: forCluster,
    // A node role listed for one cluster reaches that cluster's pools only.
    authorize: (cluster, request) => mayCall(cluster, request.caller),
  });
}

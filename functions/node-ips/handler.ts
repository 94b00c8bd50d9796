/**
 * ENI IP assignment behind a function URL with IAM auth (callers sign with SigV4):
 * `POST /v1/nodes/{node}/ips` and `DELETE /v1/nodes/{node}/ips/{ip}`, under `/clusters/<name>`
 * where the stack serves several clusters (each node agent is configured with its cluster's
 * base URL). Repeated requests answer the same, so a caller may retry freely. An assign that
 * leaves its pool low hands a background refill to the ENI function (an asynchronous invoke)
 * and answers without waiting for EC2.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import middy from '@middy/core';
import { eniRunner, nodeIpFault, sdkEc2Account } from '../../shared/app/eni-pass.js';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import { lambdaPassContexts } from '../../shared/app/lambda.js';
import {
  handlerTracing,
  observability,
  publishMetrics,
  requestLogging,
  unavailableRecorder,
} from '../../shared/app/observability.js';
import { refillInvokers } from '../../shared/app/refill-invoker.js';
import { clusterRoutes } from '../../shared/clusters/http-routes.js';
import { nodeCallerCheck } from '../../shared/clusters/node-callers.js';
import { activeTracing, lambdaSettings } from '../../shared/config/load.js';
import { createHttpApi } from '../../shared/http/api.js';

const { logger, metrics, forCluster } = observability('node-ips');
const tracing = await handlerTracing('node-ips', activeTracing());
const settings = lambdaSettings();
// A single-cluster stack's refill events name no cluster, as before it could serve several.
const several = settings.configs.length > 1;
const account = sdkEc2Account(settings.region);
const refills = refillInvokers(settings, (node, error) =>
  logger.warn('could not hand a background refill to the ENI function', { node, error }),
);
const apis = lambdaPassContexts(settings).map((context, config) =>
  createHttpApi({
    healthy: async () => true,
    nodeIps: eniRunner(context, account).nodeIps(refills(several ? config.cluster : undefined)),
    classify: nodeIpFault,
    // The table did not answer: a 503 the node agent retries, logged and alarmed as a 500 is.
    onUnavailable: unavailableRecorder(logger, metrics),
  }),
);
const mayCall = nodeCallerCheck(settings.nodeIpsCallers);
const api = clusterRoutes(apis, {
  // Only signed callers with the stack's grant get here: naming the clusters tells them nothing new.
  unknown: 'explain',
  onCluster: forCluster,
  // A node role listed for one cluster reaches that cluster's pools only.
  authorize: (cluster, request) => mayCall(cluster, request.caller),
});

const answer = functionUrlHandler(api, { logger, metrics });

export const handler = middy(answer)
  .use(tracing)
  .use(requestLogging(logger))
  .use(publishMetrics(metrics))
  .use(parser({ schema: LambdaFunctionUrlSchema }));

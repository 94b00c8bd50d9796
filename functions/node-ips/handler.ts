/**
 * ENI IP assignment behind a function URL with IAM auth (callers sign with SigV4):
 * `POST /v1/nodes/{node}/ips` and `DELETE /v1/nodes/{node}/ips/{ip}`. Repeated requests answer
 * the same, so a caller may retry freely.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import middy from '@middy/core';
import { eniRunner, nodeIpFault } from '../../shared/app/eni-pass.js';
import { lambdaPassContext } from '../../shared/app/lambda.js';
import { observability } from '../../shared/app/observability.js';
import { createHttpApi, type HttpResponse } from '../../shared/http/api.js';

const { logger, metrics } = observability('node-ips');
const eni = eniRunner(lambdaPassContext());
const api = createHttpApi({
  healthy: async () => true,
  nodeIps: eni.nodeIps,
  classify: nodeIpFault,
});

const answer = async (event: LambdaFunctionUrlEvent): Promise<HttpResponse> => {
  const body =
    event.body && event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body;
  try {
    const response = await api({
      method: event.requestContext.http.method,
      path: event.rawPath,
      body,
    });
    metrics.addMetric(`Http${response.statusCode}`, MetricUnit.Count, 1);
    return response;
  } catch (error) {
    logger.error('request failed', { error: error as Error, path: event.rawPath });
    metrics.addMetric('InternalErrors', MetricUnit.Count, 1);
    return {
      statusCode: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"error":"internal error"}',
    };
  }
};

export const handler = middy(answer)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(logMetrics(metrics))
  .use(parser({ schema: LambdaFunctionUrlSchema }));

/**
 * The admission webhook behind a Lambda function URL: `POST /admission/<secret>`, `GET /healthz`,
 * `GET /v1/status`. Clients and the secret are set up once per container, at module scope.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import middy from '@middy/core';
import { lambdaAdmissionRuntime, webhookSecret } from '../../shared/app/lambda-admission.js';
import { observability } from '../../shared/app/observability.js';
import { createHttpApi, type HttpResponse } from '../../shared/http/api.js';

const { logger, metrics } = observability('admission');
const { settings, runtime } = lambdaAdmissionRuntime();
const api = createHttpApi({
  admission: runtime.admission,
  healthy: () => runtime.healthy(),
  status: () => runtime.status(),
  admissionSecret: await webhookSecret(settings),
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
    // Never a silent allow: the apiserver sees a failed call and applies the failurePolicy.
    logger.error('request failed', {
      error: error as Error,
      path: event.rawPath.split('/').slice(0, 2).join('/'),
    });
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

/**
 * The admission webhook behind a public Lambda function URL: `POST /admission/<secret>`,
 * `GET /healthz/<secret>`, `GET /v1/status/<secret>`; without the secret nothing answers but a
 * bare 404. Clients and the secret are set up once per container, at module scope.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import { lambdaAdmissionRuntime, webhookSecret } from '../../shared/app/lambda-admission.js';
import {
  decisionRecorder,
  forCluster,
  observability,
  publishMetrics,
} from '../../shared/app/observability.js';
import { createHttpApi } from '../../shared/http/api.js';

const { logger, metrics, tracer } = observability('admission');
const { settings, runtime } = lambdaAdmissionRuntime((task, error) =>
  // The values stay marked in the table: the repair pass finishes what this task would have.
  logger.warn('settle task not queued', { task, error }),
);
forCluster(metrics, settings.config.cluster);
const api = createHttpApi({
  admission: runtime.admission,
  healthy: () => runtime.healthy(),
  status: () => runtime.status(),
  pathSecret: await webhookSecret(settings),
  onDecision: decisionRecorder(logger, metrics),
});

const answer = functionUrlHandler(api, { logger, metrics });

export const handler = middy(answer)
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics))
  .use(parser({ schema: LambdaFunctionUrlSchema }));

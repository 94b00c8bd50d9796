/**
 * The admission webhook behind a public Lambda function URL: `POST /admission/<secret>`,
 * `GET /healthz/<secret>`, `GET /v1/status/<secret>`, each under `/clusters/<name>` where the
 * stack serves several clusters (each with its own secret); without the secret nothing answers
 * but a bare 404. Clients are set up once per container, at module scope, and every cluster's
 * secret is read then, during INIT.
 */
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import { lambdaAdmissionApi } from '../../shared/app/lambda-admission.js';
import {
  decisionRecorder,
  observability,
  observedHandler,
  unavailableRecorder,
} from '../../shared/app/observability.js';

const observe = observability('admission');
const { logger, metrics, forCluster } = observe;
const api = await lambdaAdmissionApi({
  // The values stay marked in the table: the repair pass finishes what this task would have.
  onSettleLost: (task, error) => logger.warn('settle task not queued', { task, error }),
  onDecision: decisionRecorder(logger, metrics),
  // The table or the EKS API did not answer: the reviewer got a 503 naming it; so do the log
  // and the InternalErrors alarm.
  onUnavailable: unavailableRecorder(logger, metrics),
  onCluster: forCluster,
  serviceCidrs: { info: (line) => logger.info(line), warn: (line) => logger.warn(line) },
  fronts: { warn: (line) => logger.warn(line) },
  onScaleTriggerFailed: (error) => logger.warn('scale-up trigger failed', { error }),
});

const answer = functionUrlHandler(api, { logger, metrics });

export const handler = (await observedHandler('admission', observe, answer)).use(
  parser({ schema: LambdaFunctionUrlSchema }),
);

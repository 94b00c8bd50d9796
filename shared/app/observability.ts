/**
 * Powertools logger and metrics shared by every berth function (service name per function), and
 * its tracer where the function traces actively.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, type Metrics as MetricsType, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { AdmissionDecision } from '../admission/decision.js';
import { activeTracing } from '../config/load.js';
import type { HttpFault } from '../http/exchange.js';

/** A logger and a metrics emitter for one berth function. */
export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * The cluster an invocation serves: every metric it records carries the cluster as a
   * dimension (one dashboard tells clusters apart), and every log line its key. Called per
   * invocation (and per cluster where one invocation serves several), since a container serves
   * every cluster of its stack; metrics recorded for the previous cluster are flushed under its
   * dimension first.
   */
  readonly forCluster: (cluster: string) => void;
}

/** The observability of one berth function (service name `berth-<service>`). */
export function observability(service: string): Observability {
  const serviceName = `berth-${service}`;
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({ namespace: 'berth', serviceName });
  let current: string | undefined;
  return {
    logger,
    metrics,
    forCluster(cluster) {
      logger.appendKeys({ cluster });
      if (cluster === current) return;
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
      // Powertools logs a warning (a billed line) whenever a default dimension is overwritten:
      // the defaults are set afresh instead, the service's own among them.
      metrics.clearDefaultDimensions();
      metrics.setDefaultDimensions({ service: serviceName, cluster });
      current = cluster;
    },
  };
}

/**
 * The middleware that traces each invocation with Powertools Tracer, for a function that traces
 * actively; none for a pass-through one. Tracer is imported only here, and only then: its X-Ray
 * SDK turns on an async hook (cls-hooked) for every promise of the process once loaded, traced
 * or not, which made the admission benchmark's reviews cost CPU p50 0.14 ms instead of 0.09. A
 * pass-through function's sampled requests still get Lambda's own segment. Whether the function
 * traces actively is the environment's to say (`activeTracing`) unless `active` is given.
 */
export async function handlerTracing(
  service: string,
  active: boolean = activeTracing(),
): Promise<MiddlewareObj[]> {
  if (!active) return [];
  const [{ Tracer }, { captureLambdaHandler }] = await Promise.all([
    import('@aws-lambda-powertools/tracer'),
    import('@aws-lambda-powertools/tracer/middleware'),
  ]);
  return [captureLambdaHandler(new Tracer({ serviceName: `berth-${service}` }))];
}

/**
 * Gives each invocation's log lines its request id, and clears the keys the invocation appended
 * (its cluster) after it. Instead of Powertools' `injectLambdaContext`, which adds the function's
 * ARN, name, memory size and cold start to every line: the log group already names the function,
 * and those keys were 40% of an admission decision's line, one line per review (CloudWatch Logs
 * bills every byte ingested).
 */
export function requestLogging(logger: Logger): MiddlewareObj<unknown, unknown, Error, Context> {
  return {
    before: (request) => {
      logger.appendKeys({ request_id: request.context.awsRequestId });
    },
    after: () => logger.resetKeys(),
    onError: () => logger.resetKeys(),
  };
}

/**
 * Flushes the invocation's metrics as one EMF line after the handler, and writes nothing when it
 * recorded none: Powertools' `logMetrics` logs a warning then, a billed log line for every quiet
 * invocation (most bindings and deletes, most node IP calls).
 */
export function publishMetrics(metrics: Metrics): MiddlewareObj {
  const flush = async () => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: flush, onError: flush };
}

/**
 * `handler` in the middy chain every berth function runs in: traced when the function traces
 * actively (`handlerTracing`), its log lines keyed by request id, its metrics flushed after it.
 * A function that parses its event adds the parser after these.
 */
export async function observedHandler<TEvent, TResult>(
  service: string,
  observe: Observability,
  handler: (event: TEvent, context: Context) => Promise<TResult>,
) {
  return middy(handler)
    .use(await handlerTracing(service))
    .use(requestLogging(observe.logger))
    .use(publishMetrics(observe.metrics));
}

/**
 * Records a request answered 503 because the table or the Kubernetes API did not answer: one
 * ERROR line, and one `InternalErrors` count, the metric the HTTP functions' alarms watch. The
 * apiserver treats a 503 as it treats a 500 (its failurePolicy applies, so with `Fail` every
 * game server and Service CREATE is refused): the same alarm must fire.
 */
export function unavailableRecorder(
  logger: Logger,
  metrics: MetricsType,
): (fault: HttpFault) => void {
  return (fault) => {
    logger.error('dependency unavailable', { answer: fault.message });
    metrics.addMetric('InternalErrors', MetricUnit.Count, 1);
  };
}

/**
 * Records an admission decision: one structured log line at info (denials included), and counts
 * of denied reviews, denials by code and full-range denials. Allowed reviews are the function's
 * invocations less its denials, and the values they hand out are in their log lines and in each
 * range's use (`/metrics`, the dashboard): no metric of their own, which CloudWatch would bill
 * for every hour a session starts in.
 */
export function decisionRecorder(
  logger: Logger,
  metrics: MetricsType,
): (decision: AdmissionDecision) => void {
  return (decision) => {
    logger.info('admission decision', { decision });
    if (decision.allowed) return;
    metrics.addMetric('AdmissionDenied', MetricUnit.Count, 1);
    if (decision.reason?.includes('range is full')) {
      metrics.addMetric('RangeFullDenials', MetricUnit.Count, 1);
    }
    const byCode = metrics.singleMetric();
    byCode.addDimension('code', String(decision.code ?? 0));
    byCode.addMetric('AdmissionDeniedByCode', MetricUnit.Count, 1);
  };
}

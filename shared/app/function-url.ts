/**
 * A berth HTTP API behind a Lambda function URL: the event becomes an `HttpRequest`, the answer
 * goes back as is, and an internal fault is logged and answered 500 (for the webhook, the
 * apiserver then applies its failurePolicy: never a silent allow).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import type { HttpRequest, HttpResponse } from '../http/exchange.js';

/** Adapts `api` to function URL events, counting answers by status code. */
export function functionUrlHandler(
  api: (request: HttpRequest) => Promise<HttpResponse>,
  observe: { readonly logger: Logger; readonly metrics: Metrics },
): (event: LambdaFunctionUrlEvent) => Promise<HttpResponse> {
  const { logger, metrics } = observe;
  return async (event) => {
    const body =
      event.body && event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
    try {
      // Answers by status are Lambda's own function URL metrics (free); berth counts only its faults.
      const caller = event.requestContext.authorizer?.iam?.userArn;
      return await api({
        method: event.requestContext.http.method,
        path: event.rawPath,
        query: Object.fromEntries(new URLSearchParams(event.rawQueryString ?? '')),
        body,
        headers: event.headers ?? {},
        ...(caller ? { caller } : {}),
      });
    } catch (error) {
      // The path's first segment only: the webhook's path carries its secret.
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
}

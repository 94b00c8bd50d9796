/** Powertools logger and metrics shared by every berth function (service name per function). */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

/** A logger and a metrics emitter for one berth function. */
export function observability(service: string): { logger: Logger; metrics: Metrics } {
  return {
    logger: new Logger({ serviceName: `berth-${service}` }),
    metrics: new Metrics({ namespace: 'berth', serviceName: `berth-${service}` }),
  };
}

/**
 * What makes an invocation in the cost meter look like one on Lambda: the context and function
 * URL event Lambda passes, the trace header it sets, the middy chains the handlers run in, the
 * stdout and stderr it ships to CloudWatch Logs with its own START, END and REPORT lines, and the
 * custom metrics the EMF lines among them carry.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { LambdaFunctionUrlSchema } from '@aws-lambda-powertools/parser/schemas/lambda';
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { FunctionName } from '../../../infra/constructs/berth-function.js';
import { functionUrlHandler } from '../../../shared/app/function-url.js';
import {
  handlerTracing,
  type observability,
  publishMetrics,
  requestLogging,
} from '../../../shared/app/observability.js';
import type { HttpRequest, HttpResponse } from '../../../shared/http/exchange.js';
import {
  lambdaContext as invocationContext,
  functionUrlEvent as urlEvent,
} from '../../support/lambda-events.js';

/** Lambda's trace header, which Powertools copies into every log line as `xray_trace_id`. */
const TRACE_HEADER = 'Root=1-67a1b2c3-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1';

/** The lines of the invocation a write belongs to (invocations may run at once). */
const invocationLines = new AsyncLocalStorage<string[]>();
/** Invocations being captured; the streams are diverted while there is any. */
let capturing = 0;
let restore: (() => void) | undefined;

/** Diverts stdout and stderr: a write made by an invocation goes to its lines, others pass. */
function divertStreams(): () => void {
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((stream) => stream.write);
  streams.forEach((stream, i) => {
    const original = originals[i] as typeof stream.write;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const lines = invocationLines.getStore();
      if (!lines) return (original as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
      lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const done = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof stream.write;
  });
  const trace = process.env._X_AMZN_TRACE_ID;
  // Lambda sets the trace header per invocation; Powertools logs it on every line.
  process.env._X_AMZN_TRACE_ID = TRACE_HEADER;
  return () => {
    streams.forEach((stream, i) => {
      stream.write = originals[i] as typeof stream.write;
    });
    if (trace === undefined) delete process.env._X_AMZN_TRACE_ID;
    else process.env._X_AMZN_TRACE_ID = trace;
  };
}

/**
 * Stdout and stderr of an invocation, as Lambda would ship them to CloudWatch Logs; several
 * invocations may be captured at once, each keeping its own lines.
 */
export async function captured<T>(run: () => Promise<T>): Promise<{ value: T; text: string[] }> {
  const text: string[] = [];
  if (capturing++ === 0) restore = divertStreams();
  try {
    return { value: await invocationLines.run(text, run), text };
  } finally {
    if (--capturing === 0) {
      restore?.();
      restore = undefined;
    }
  }
}

/**
 * The lines the Lambda platform writes for every invocation (text format): START, END and
 * REPORT, the last with the X-Ray fields of active tracing.
 */
export function platformLines(requestId: string, memoryMb: number, wallMs: number): string[] {
  const ms = wallMs.toFixed(2);
  return [
    `START RequestId: ${requestId} Version: $LATEST\n`,
    `END RequestId: ${requestId}\n`,
    `REPORT RequestId: ${requestId}\tDuration: ${ms} ms\tBilled Duration: ${Math.ceil(wallMs)} ms\tMemory Size: ${memoryMb} MB\tMax Memory Used: 118 MB\t\nXRAY TraceId: 1-67a1b2c3-0123456789abcdef01234567\tSegmentId: 0123456789abcdef\tSampled: true\t\n`,
  ];
}

/**
 * A Lambda context for one invocation of `fn`, named as CloudFormation names a stack's function,
 * with minutes left.
 */
export function lambdaContext(fn: FunctionName, memoryMb: number): Context {
  const context = invocationContext(
    `berth-reference-${fn.replace('-', '')}Function-Ab12Cd34Ef56`,
    memoryMb,
  );
  // Generous: racing writers on a loaded 2-core machine take longer than Lambda would, and
  // middy's early timeout would end the meter rather than the invocation.
  const remainingMs = fn === 'admission' || fn === 'node-ips' ? 60_000 : 300_000;
  return { ...context, getRemainingTimeInMillis: () => remainingMs };
}

/** A function URL event for an HTTP request, carrying Lambda's trace header. */
export function functionUrlEvent(
  method: string,
  path: string,
  query: Readonly<Record<string, string>>,
  body: unknown,
): LambdaFunctionUrlEvent {
  return urlEvent(method, path, { query, body, headers: { 'x-amzn-trace-id': TRACE_HEADER } });
}

/**
 * An HTTP function's middy chain, as in functions/{admission,node-ips}/handler.ts, around the
 * function URL adapter they share: no tracer, as the stack deploys them (pass-through tracing).
 */
export function functionUrlFunction(
  api: (request: HttpRequest) => Promise<HttpResponse>,
  obs: ReturnType<typeof observability>,
): (event: LambdaFunctionUrlEvent, context: Context) => Promise<HttpResponse> {
  const handler = middy(functionUrlHandler(api, obs))
    .use(requestLogging(obs.logger))
    .use(publishMetrics(obs.metrics))
    .use(parser({ schema: LambdaFunctionUrlSchema }));
  return (event, context) => handler(event, context) as Promise<HttpResponse>;
}

/**
 * A pass function's middy chain, as in functions/{settle,repair,scale,eni}/handler.ts, around a
 * body that mirrors the handler's (its logs and metrics included), traced actively as the stack
 * deploys them. The tracer loads at the first call; from then on its async hook weighs on every
 * promise of this process, the request functions' too, so their durations are an upper bound.
 */
export function passFunction<E, R>(
  service: string,
  obs: ReturnType<typeof observability>,
  body: (event: E, context: Context) => Promise<R>,
): (event: E, context: Context) => Promise<R> {
  let handler: Promise<(event: E, context: Context) => Promise<unknown>> | undefined;
  return async (event, context) => {
    handler ??= handlerTracing(service, true).then((tracing) =>
      middy(body).use(tracing).use(requestLogging(obs.logger)).use(publishMetrics(obs.metrics)),
    );
    return (await handler)(event, context) as Promise<R>;
  };
}

/** Adds the custom metrics an EMF line carries: namespace, dimension values, name. */
export function collectMetrics(line: string, into: Set<string>): void {
  for (const text of line.split('\n')) {
    if (!text.includes('"CloudWatchMetrics"')) continue;
    const blob = JSON.parse(text) as Record<string, unknown> & {
      _aws: {
        CloudWatchMetrics: {
          Namespace: string;
          Dimensions: string[][];
          Metrics: { Name: string }[];
        }[];
      };
    };
    for (const directive of blob._aws.CloudWatchMetrics) {
      for (const dimensions of directive.Dimensions) {
        const dims = dimensions.map((d) => `${d}=${String(blob[d])}`).join(',');
        for (const metric of directive.Metrics)
          into.add(`${directive.Namespace}|${dims}|${metric.Name}`);
      }
    }
  }
}

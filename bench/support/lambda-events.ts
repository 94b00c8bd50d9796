/**
 * What Lambda hands a handler, for tests and the cost meter that run berth's handlers as Lambda
 * runs them: an invocation's context and a function URL's event.
 */
import { randomUUID } from 'node:crypto';
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import type { Context } from 'aws-lambda';

/** Where the functions run: an example account and Region. */
export const LAMBDA_ACCOUNT = '123456789012';
export const LAMBDA_REGION = 'us-east-1';

/** The context of one invocation of the function named `functionName`. */
export function lambdaContext(functionName: string, memoryMb: number): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${LAMBDA_REGION}:${LAMBDA_ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `2026/06/01/[$LATEST]${randomUUID().replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => 4_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** A function URL event as Lambda builds it for a kube-apiserver's HTTPS request. */
export function functionUrlEvent(
  method: string,
  path: string,
  options: {
    readonly query?: Readonly<Record<string, string>>;
    /** Sent as JSON. */
    readonly body?: unknown;
    readonly headers?: Readonly<Record<string, string>>;
  } = {},
): LambdaFunctionUrlEvent {
  const now = Date.now();
  const query = options.query ?? {};
  const rawQueryString = new URLSearchParams(query).toString();
  const urlId = 'abcdefghijklmnopqrstuvwxyz012345';
  const domainName = `${urlId}.lambda-url.${LAMBDA_REGION}.on.aws`;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString,
    headers: {
      'content-type': 'application/json',
      host: domainName,
      'user-agent': 'kube-apiserver-admission',
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      'x-forwarded-for': '203.0.113.10',
      ...options.headers,
    },
    ...(rawQueryString ? { queryStringParameters: { ...query } } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: urlId,
      domainName,
      domainPrefix: urlId,
      http: {
        method,
        path,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.10',
        userAgent: 'kube-apiserver-admission',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    isBase64Encoded: false,
  } as LambdaFunctionUrlEvent;
}

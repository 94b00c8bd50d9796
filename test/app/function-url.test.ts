import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import { describe, expect, it } from 'vitest';
import { functionUrlHandler } from '../../shared/app/function-url.js';
import type { HttpRequest } from '../../shared/http/exchange.js';

function event(path: string, body: string, isBase64Encoded: boolean): LambdaFunctionUrlEvent {
  return {
    version: '2.0',
    rawPath: path,
    rawQueryString: 'timeout=5s',
    headers: { 'content-type': 'application/json' },
    requestContext: { http: { method: 'POST', path } },
    body,
    isBase64Encoded,
  } as unknown as LambdaFunctionUrlEvent;
}

const observe = () => ({
  logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
  metrics: new Metrics({ namespace: 'test' }),
});

/** A handler over an API that records every request it is handed and answers 200. */
function recording() {
  const seen: HttpRequest[] = [];
  const handle = functionUrlHandler(async (request) => {
    seen.push(request);
    return { statusCode: 200, headers: {}, body: 'ok' };
  }, observe());
  return { seen, handle };
}

describe('functionUrlHandler', () => {
  it('hands the API the method, the path, the query apart and the decoded body', async () => {
    const { seen, handle } = recording();
    await handle(event('/admission/s3cr3t', Buffer.from('{"a":1}').toString('base64'), true));
    await handle(event('/healthz', 'plain', false));
    const headers = { 'content-type': 'application/json' };
    expect(seen).toEqual([
      {
        method: 'POST',
        path: '/admission/s3cr3t',
        query: { timeout: '5s' },
        body: '{"a":1}',
        headers,
      },
      { method: 'POST', path: '/healthz', query: { timeout: '5s' }, body: 'plain', headers },
    ]);
  });

  it('names the SigV4 caller Lambda verified, when there is one', async () => {
    const { seen, handle } = recording();
    const caller = 'arn:aws:sts::111122223333:assumed-role/games-a-nodes/i-0abc';
    const signed = event('/v1/nodes/n/ips', '{}', false) as unknown as {
      requestContext: Record<string, unknown>;
    };
    signed.requestContext.authorizer = { iam: { userArn: caller } };
    await handle(signed as unknown as Parameters<typeof handle>[0]);
    await handle(event('/v1/nodes/n/ips', '{}', false));
    expect(seen.map((request) => request.caller)).toEqual([caller, undefined]);
  });

  it('answers an internal fault with 500 and logs it without the secret path segment', async () => {
    const { logger, metrics } = observe();
    const logged: unknown[] = [];
    logger.error = (...args: unknown[]) => {
      logged.push(args);
    };
    const handle = functionUrlHandler(
      async () => {
        throw new Error('store down');
      },
      { logger, metrics },
    );
    const response = await handle(event('/admission/s3cr3t', '{}', false));
    expect(response.statusCode).toBe(500);
    expect(JSON.stringify(logged)).not.toContain('s3cr3t');
    expect(JSON.stringify(logged)).toContain('/admission');
  });
});

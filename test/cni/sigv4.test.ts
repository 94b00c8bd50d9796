import { createServer, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sigv4Signer } from '../../cni/node-ip-client.js';

/** An instance metadata service on loopback that answers only IMDSv2 (token first). */
let imds: ReturnType<typeof createServer>;
let base = '';
const seen: { method?: string; url?: string; token?: string }[] = [];

beforeAll(async () => {
  imds = createServer((request: IncomingMessage, response) => {
    seen.push({
      method: request.method,
      url: request.url,
      token: request.headers['x-aws-ec2-metadata-token'] as string | undefined,
    });
    if (request.url === '/latest/api/token' && request.method === 'PUT')
      return response.end('tok-1');
    if (request.headers['x-aws-ec2-metadata-token'] !== 'tok-1') {
      response.statusCode = 401;
      return response.end();
    }
    const answers: Record<string, string> = {
      '/latest/meta-data/iam/security-credentials/': 'game-nodes\n',
      '/latest/meta-data/iam/security-credentials/game-nodes': JSON.stringify({
        AccessKeyId: 'ASIAEXAMPLE',
        SecretAccessKey: 'secret',
        Token: 'session-token',
      }),
      '/latest/meta-data/placement/region': 'eu-west-1',
    };
    const body = answers[request.url ?? ''];
    response.statusCode = body === undefined ? 404 : 200;
    response.end(body ?? '');
  });
  await new Promise<void>((resolve) => imds.listen(0, '127.0.0.1', resolve));
  const address = imds.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(() => {
  imds.close();
});

describe('berth-cni request signing', () => {
  it('signs with the instance role from IMDSv2 for the lambda service in the instance region', async () => {
    const sign = sigv4Signer(undefined, base);
    const signed = await sign(
      {
        method: 'POST',
        url: new URL('https://abc.lambda-url.eu-west-1.on.aws/v1/nodes/n1/ips'),
        headers: { 'content-type': 'application/json' },
        body: '{"namespace":"games","pod":"gs-1"}',
      },
      AbortSignal.timeout(10_000),
    );
    expect(signed.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
    );
    expect(signed.headers['x-amz-security-token']).toBe('session-token');
    expect(seen[0]).toMatchObject({ method: 'PUT', url: '/latest/api/token' });
    expect(seen.slice(1).every((call) => call.token === 'tok-1')).toBe(true);
  });

  it('signs for the configured region when one is given', async () => {
    const signed = await sigv4Signer('us-east-2', base)(
      {
        method: 'GET',
        url: new URL('https://abc.lambda-url.us-east-2.on.aws/v1/nodes/n1/ips?pod=p'),
        headers: {},
      },
      AbortSignal.timeout(10_000),
    );
    expect(signed.headers.authorization).toContain('/us-east-2/lambda/aws4_request');
  });
});

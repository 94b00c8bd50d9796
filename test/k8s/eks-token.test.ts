import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createEksToken, EKS_TOKEN_PREFIX, stsHostname } from '../../shared/k8s/eks-token.js';

const NOW = Date.parse('2026-03-01T12:34:56Z');
const CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session/token+with=odd chars',
};

/** The presigned URL inside a token. */
function decode(token: string): URL {
  expect(token.startsWith(EKS_TOKEN_PREFIX)).toBe(true);
  return new URL(Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8'));
}

const rfc3986 = (value: string): string =>
  encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/** SigV4 for a presigned GET, written out independently of @smithy/signature-v4. */
function expectedSignature(url: URL, cluster: string, secret: string, region: string): string {
  const params = [...url.searchParams.entries()].filter(([key]) => key !== 'X-Amz-Signature');
  const canonicalQuery = params
    .map(([key, value]) => [rfc3986(key), rfc3986(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  const canonicalRequest = [
    'GET',
    '/',
    canonicalQuery,
    `host:${url.hostname}\nx-k8s-aws-id:${cluster}\n`,
    'host;x-k8s-aws-id',
    createHash('sha256').update('').digest('hex'),
  ].join('\n');
  const longDate = url.searchParams.get('X-Amz-Date') ?? '';
  const shortDate = longDate.slice(0, 8);
  const scope = `${shortDate}/${region}/sts/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    longDate,
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${secret}`).update(shortDate).digest();
  for (const part of [region, 'sts', 'aws4_request']) {
    key = createHmac('sha256', key).update(part).digest();
  }
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

describe('createEksToken', () => {
  const make = (region = 'eu-west-1', cluster = 'games-prod') =>
    createEksToken({ cluster, region, credentials: async () => CREDENTIALS, now: () => NOW });

  it('presigns STS GetCallerIdentity with the cluster header signed and a 60 s expiry', async () => {
    const url = decode(await make());

    expect(url.origin).toBe('https://sts.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/');
    const query = url.searchParams;
    expect(query.get('Action')).toBe('GetCallerIdentity');
    expect(query.get('Version')).toBe('2011-06-15');
    expect(query.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(query.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20260301/eu-west-1/sts/aws4_request');
    expect(query.get('X-Amz-Date')).toBe('20260301T123456Z');
    expect(query.get('X-Amz-Expires')).toBe('60');
    expect(query.get('X-Amz-SignedHeaders')?.split(';')).toContain('x-k8s-aws-id');
    expect(query.get('X-Amz-SignedHeaders')).toBe('host;x-k8s-aws-id');
    expect(query.get('X-Amz-Security-Token')).toBe(CREDENTIALS.sessionToken);
    expect(query.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('carries a signature that an independent SigV4 computation reproduces', async () => {
    const url = decode(await make('us-east-2', 'c1'));

    expect(url.searchParams.get('X-Amz-Signature')).toBe(
      expectedSignature(url, 'c1', CREDENTIALS.secretAccessKey, 'us-east-2'),
    );
  });

  it('binds the cluster name: another cluster gets another signature', async () => {
    const a = decode(await make('eu-west-1', 'a')).searchParams.get('X-Amz-Signature');
    const b = decode(await make('eu-west-1', 'b')).searchParams.get('X-Amz-Signature');

    expect(a).not.toBe(b);
  });

  it('is base64url without padding and within the authenticator size limit', async () => {
    const token = await make();

    expect(token).toMatch(/^k8s-aws-v1\.[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThanOrEqual(4096);
  });

  it('is the same for the same credentials, cluster and clock', async () => {
    expect(await make()).toBe(await make());
  });

  it('omits the security token for long-term credentials', async () => {
    const token = await createEksToken({
      cluster: 'c1',
      region: 'eu-west-1',
      credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret' }),
      now: () => NOW,
    });

    expect(decode(token).searchParams.has('X-Amz-Security-Token')).toBe(false);
  });
});

describe('stsHostname', () => {
  it('names the regional STS endpoint, in the China partition too', () => {
    expect(stsHostname('ap-southeast-1')).toBe('sts.ap-southeast-1.amazonaws.com');
    expect(stsHostname('cn-north-1')).toBe('sts.cn-north-1.amazonaws.com.cn');
  });
});

/**
 * The EKS bearer token, made offline the way `aws eks get-token` and aws-iam-authenticator make
 * it: a presigned STS GetCallerIdentity URL that binds the cluster name through the signed
 * `x-k8s-aws-id` header. EKS calls STS with it to learn the caller's IAM role; berth never calls
 * STS itself, so no STS endpoint is needed in the VPC.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

/** Prefix aws-iam-authenticator expects in front of the base64url presigned URL. */
export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';

/** The header naming the cluster; it must be signed or EKS rejects the token. */
const CLUSTER_ID_HEADER = 'x-k8s-aws-id';

/**
 * `X-Amz-Expires` is set to 60 for compatibility and ignored by EKS: a token is honoured for
 * 15 minutes after its `X-Amz-Date` (aws-iam-authenticator `token.go`).
 */
const PRESIGN_EXPIRES_SECONDS = 60;

/** How long EKS accepts a token after it was signed. */
export const EKS_TOKEN_LIFETIME_MS = 15 * 60_000;

/** What a token is made of; credentials and clock are injected. */
export interface EksTokenOptions {
  /** The EKS cluster name (not its ARN). */
  readonly cluster: string;
  readonly region: string;
  readonly credentials: AwsCredentialIdentityProvider;
  /** Epoch ms; the signing date. */
  readonly now: () => number;
}

/** The STS host of a region (China partition included). */
export function stsHostname(region: string): string {
  return `sts.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;
}

/** Makes a bearer token `k8s-aws-v1.<base64url(presigned URL)>`, without padding. */
export async function createEksToken(options: EksTokenOptions): Promise<string> {
  const hostname = stsHostname(options.region);
  const signer = new SignatureV4({
    service: 'sts',
    region: options.region,
    credentials: options.credentials,
    sha256: Sha256,
  });
  const presigned = await signer.presign(
    new HttpRequest({
      method: 'GET',
      protocol: 'https:',
      hostname,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: hostname, [CLUSTER_ID_HEADER]: options.cluster },
    }),
    { expiresIn: PRESIGN_EXPIRES_SECONDS, signingDate: new Date(options.now()) },
  );
  const url = `https://${hostname}/?${serializeQuery(presigned.query ?? {})}`;
  return EKS_TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url');
}

/** The presigned query as a URL query string; STS re-canonicalises it, so plain escaping will do. */
function serializeQuery(query: NonNullable<HttpRequest['query']>): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    const values = value === null ? [] : Array.isArray(value) ? value : [value];
    for (const one of values) pairs.push(`${encodeURIComponent(key)}=${encodeURIComponent(one)}`);
  }
  return pairs.join('&');
}

/**
 * What reaching an EKS cluster's API from Lambda takes, apart from any Kubernetes client: the
 * endpoint and CA from DescribeCluster (looked up once per container; they do not change) and a
 * bearer token from the function's own role, made anew before its 15-minute life runs out. Both
 * the client-node factory (./eks-cluster-api.ts) and the admission function's small reader
 * (./https-node-reader.ts) take their access from here, so token policy lives in one place and the
 * admission bundle does not have to carry client-node to get it.
 */
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { createEksToken, EKS_TOKEN_LIFETIME_MS } from './eks-token.js';
import { EksClusterLookupError } from './errors.js';

/** Where a cluster's API server is and which CA signs its certificate. */
export interface EksClusterEndpoint {
  /** `https://...` */
  readonly endpoint: string;
  /** Base64 PEM, as DescribeCluster returns it and client-node's `caData` takes it. */
  readonly caData: string;
}

/** The one EKS call berth makes to reach a cluster. */
export interface EksClusterLookup {
  describe(cluster: string): Promise<EksClusterEndpoint>;
}

/** `EksClusterLookup` over the AWS SDK's `EKSClient`. */
export class SdkEksClusterLookup implements EksClusterLookup {
  readonly #client: EKSClient;

  constructor(client: EKSClient) {
    this.#client = client;
  }

  async describe(cluster: string): Promise<EksClusterEndpoint> {
    const out = await this.#client.send(new DescribeClusterCommand({ name: cluster }));
    const endpoint = out.cluster?.endpoint;
    const caData = out.cluster?.certificateAuthority?.data;
    if (!endpoint) {
      throw new EksClusterLookupError(
        cluster,
        `has no API endpoint yet (status ${out.cluster?.status ?? 'unknown'})`,
      );
    }
    if (!caData) throw new EksClusterLookupError(cluster, 'has no certificate authority data');
    return { endpoint, caData };
  }
}

/** Make a new token when the current one is this old: 5 minutes before EKS stops honouring it. */
export const EKS_TOKEN_REFRESH_MS = EKS_TOKEN_LIFETIME_MS - 5 * 60_000;

/** An endpoint, its CA and a bearer token young enough to use now. */
export interface EksAccess extends EksClusterEndpoint {
  readonly token: string;
  /** Epoch ms the token was signed at. */
  readonly tokenMadeAt: number;
}

/** What `EksCredentials` needs; AWS credentials, lookup and clock are injected. */
export interface EksCredentialsOptions {
  /** The EKS cluster name (not its ARN). */
  readonly cluster: string;
  readonly region: string;
  readonly credentials: AwsCredentialIdentityProvider;
  readonly lookup: EksClusterLookup;
  /** Epoch ms. */
  readonly now: () => number;
  /** Token age that triggers a new token; `EKS_TOKEN_REFRESH_MS` by default. */
  readonly tokenRefreshMs?: number;
}

/**
 * Hands out the cluster's access, the same object while its token is fresh and a new one (new
 * token, same endpoint) once the token is ~10 minutes old, so callers can tell a refresh by
 * identity. Concurrent callers share one refresh.
 */
export class EksCredentials {
  readonly #options: EksCredentialsOptions;
  readonly #refreshMs: number;
  #endpoint: Promise<EksClusterEndpoint> | undefined;
  #current: EksAccess | undefined;
  #refreshing: Promise<EksAccess> | undefined;
  /** Bumped by `invalidate`; a refresh begun under an older one does not become current. */
  #generation = 0;

  constructor(options: EksCredentialsOptions) {
    this.#options = options;
    this.#refreshMs = options.tokenRefreshMs ?? EKS_TOKEN_REFRESH_MS;
  }

  /** The cached access while its token is fresh, else a new one. */
  async get(): Promise<EksAccess> {
    const current = this.#current;
    if (current && this.#options.now() - current.tokenMadeAt < this.#refreshMs) return current;
    if (this.#refreshing) return this.#refreshing;
    const refreshing = this.#refresh().finally(() => {
      // An `invalidate` may have replaced this refresh with a newer one already.
      if (this.#refreshing === refreshing) this.#refreshing = undefined;
    });
    this.#refreshing = refreshing;
    return refreshing;
  }

  /**
   * Drops the cached token, e.g. after a 401, so the next `get` makes a fresh one. A refresh in
   * flight still answers the callers already waiting on it, but its token is not cached.
   */
  invalidate(): void {
    this.#generation++;
    this.#current = undefined;
    this.#refreshing = undefined;
  }

  async #refresh(): Promise<EksAccess> {
    const generation = this.#generation;
    const { cluster, region, credentials, now } = this.#options;
    // A failed lookup is not cached: the next call asks EKS again.
    this.#endpoint ??= this.#options.lookup.describe(cluster).catch((error: unknown) => {
      this.#endpoint = undefined;
      throw error;
    });
    const { endpoint, caData } = await this.#endpoint;
    const tokenMadeAt = now();
    const token = await createEksToken({ cluster, region, credentials, now: () => tokenMadeAt });
    const access: EksAccess = { endpoint, caData, token, tokenMadeAt };
    if (generation === this.#generation) this.#current = access;
    return access;
  }
}

/**
 * Reaching an EKS cluster's API from Lambda: the endpoint and CA from DescribeCluster (looked up
 * once per container; they do not change), a bearer token from the function's own role, and a
 * client rebuilt before the token's 15-minute life runs out. Warm invocations reuse the client.
 */
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import type { KubeConfig } from '@kubernetes/client-node';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { ClientNodeClusterApi } from './client-node-cluster-api.js';
import type { ClusterApi } from './cluster-api.js';
import type { ClusterApiProvider } from './cluster-api-provider.js';
import { createEksToken } from './eks-token.js';
import { EksClusterLookupError } from './errors.js';
import { bearerTokenKubeConfig } from './kubeconfig.js';

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

/** Rebuild the client when its token is this old; EKS honours a token for 15 minutes. */
export const EKS_TOKEN_REFRESH_MS = 10 * 60_000;

/** What `EksClusterApiFactory` needs; credentials, lookup and clock are injected. */
export interface EksClusterApiFactoryOptions {
  readonly cluster: string;
  readonly region: string;
  readonly credentials: AwsCredentialIdentityProvider;
  readonly lookup: EksClusterLookup;
  /** Epoch ms. */
  readonly now: () => number;
  /** Token age that triggers a rebuild; `EKS_TOKEN_REFRESH_MS` by default. */
  readonly tokenRefreshMs?: number;
  /** Makes the client from a config; `ClientNodeClusterApi` by default (tests swap it). */
  readonly build?: (kubeConfig: KubeConfig) => ClusterApi;
}

interface Built {
  readonly api: ClusterApi;
  readonly tokenMadeAt: number;
}

/** Caches one `ClusterApi` per token and makes a new one once the token is ~10 minutes old. */
export class EksClusterApiFactory implements ClusterApiProvider {
  readonly #options: EksClusterApiFactoryOptions;
  readonly #refreshMs: number;
  readonly #build: (kubeConfig: KubeConfig) => ClusterApi;
  #endpoint: Promise<EksClusterEndpoint> | undefined;
  #current: Built | undefined;
  #building: Promise<Built> | undefined;

  constructor(options: EksClusterApiFactoryOptions) {
    this.#options = options;
    this.#refreshMs = options.tokenRefreshMs ?? EKS_TOKEN_REFRESH_MS;
    this.#build =
      options.build ?? ((kubeConfig) => new ClientNodeClusterApi({ kubeConfig, now: options.now }));
  }

  /** The cached client while its token is fresh, else a new one (concurrent callers share it). */
  async get(): Promise<ClusterApi> {
    const current = this.#current;
    if (current && this.#options.now() - current.tokenMadeAt < this.#refreshMs) return current.api;
    this.#building ??= this.#rebuild().finally(() => {
      this.#building = undefined;
    });
    return (await this.#building).api;
  }

  /** Drops the cached client, e.g. after a 401, so the next `get` makes a fresh token. */
  invalidate(): void {
    this.#current = undefined;
  }

  async #rebuild(): Promise<Built> {
    const { cluster, region, credentials, now } = this.#options;
    // A failed lookup is not cached: the next call asks EKS again.
    this.#endpoint ??= this.#options.lookup.describe(cluster).catch((error: unknown) => {
      this.#endpoint = undefined;
      throw error;
    });
    const endpoint = await this.#endpoint;
    const tokenMadeAt = now();
    const token = await createEksToken({ cluster, region, credentials, now: () => tokenMadeAt });
    const kubeConfig = bearerTokenKubeConfig({
      name: cluster,
      server: endpoint.endpoint,
      caData: endpoint.caData,
      token,
    });
    const built = { api: this.#build(kubeConfig), tokenMadeAt };
    this.#current = built;
    return built;
  }
}

/**
 * Reaching an EKS cluster's API through client-node from Lambda: the endpoint, CA and bearer
 * token come from `EksCredentials` (./eks-credentials.ts), and a client is rebuilt whenever the
 * token is renewed there, before its 15-minute life runs out. Warm invocations reuse the client.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { ClientNodeClusterApi } from './client-node-cluster-api.js';
import type { ClusterApi } from './cluster-api.js';
import type { ClusterApiProvider } from './cluster-api-provider.js';
import { type EksAccess, type EksClusterLookup, EksCredentials } from './eks-credentials.js';
import { bearerTokenKubeConfig } from './kubeconfig.js';

export {
  EKS_TOKEN_REFRESH_MS,
  type EksClusterEndpoint,
  type EksClusterLookup,
  SdkEksClusterLookup,
} from './eks-credentials.js';

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
  readonly access: EksAccess;
  readonly api: ClusterApi;
}

/** Caches one `ClusterApi` per token and makes a new one once the token is ~10 minutes old. */
export class EksClusterApiFactory implements ClusterApiProvider {
  readonly #credentials: EksCredentials;
  readonly #build: (kubeConfig: KubeConfig) => ClusterApi;
  readonly #cluster: string;
  #current: Built | undefined;

  constructor(options: EksClusterApiFactoryOptions) {
    this.#credentials = new EksCredentials(options);
    this.#cluster = options.cluster;
    this.#build =
      options.build ?? ((kubeConfig) => new ClientNodeClusterApi({ kubeConfig, now: options.now }));
  }

  /** The cached client while its token is fresh, else a new one (concurrent callers share it). */
  async get(): Promise<ClusterApi> {
    // Concurrent callers receive the same access object, so only the first one builds.
    const access = await this.#credentials.get();
    const current = this.#current;
    if (current?.access === access) return current.api;
    const api = this.#build(
      bearerTokenKubeConfig({
        name: this.#cluster,
        server: access.endpoint,
        caData: access.caData,
        token: access.token,
      }),
    );
    this.#current = { access, api };
    return api;
  }

  /** Drops the cached client, e.g. after a 401, so the next `get` makes a fresh token. */
  invalidate(): void {
    this.#credentials.invalidate();
    this.#current = undefined;
  }
}

/**
 * Where a `KubeConfig` comes from. Locally: `--kubeconfig`, then `KUBECONFIG`, then
 * `~/.kube/config`, the order kubectl uses. The environment is the config module's to read, so
 * `KUBECONFIG` arrives here as a parameter; client-node's `loadFromDefault` (which reads
 * `process.env` itself) is not used. In Lambda: an endpoint, a CA and a bearer token
 * (./eks-token.ts).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError } from './errors.js';

/** The local places a kubeconfig may come from, highest precedence first. */
export interface LocalKubeConfigSource {
  /** `--kubeconfig PATH`: wins over everything else. */
  readonly kubeconfigPath?: string;
  /** The `KUBECONFIG` value as the config module read it: paths joined by the OS delimiter. */
  readonly kubeconfigEnv?: string;
  /** Home directory holding `.kube/config`; `os.homedir()` when absent. */
  readonly homeDir?: string;
  /** Context to use instead of the file's `current-context`. */
  readonly context?: string;
}

/** The local kubeconfig files merged as kubectl merges them; throws `KubeConfigError` when there is none. */
function mergedKubeConfig(source: LocalKubeConfigSource): KubeConfig {
  const files = kubeconfigFiles(source);
  if (files.length === 0) {
    throw new KubeConfigError(
      'no kubeconfig found: pass --kubeconfig PATH, set KUBECONFIG, or create ~/.kube/config',
    );
  }
  const kubeConfig = new KubeConfig();
  for (const [index, file] of files.entries()) {
    if (!existsSync(file)) {
      throw new KubeConfigError(
        `kubeconfig ${file} does not exist: pass --kubeconfig PATH, or set KUBECONFIG, to a file that does`,
      );
    }
    try {
      if (index === 0) {
        kubeConfig.loadFromFile(file);
      } else {
        // Later KUBECONFIG files add clusters, users and contexts; the first current-context
        // set wins, as kubectl merges them.
        const next = new KubeConfig();
        next.loadFromFile(file);
        kubeConfig.mergeConfig(next, Boolean(kubeConfig.currentContext));
      }
    } catch (error) {
      throw new KubeConfigError(`kubeconfig ${file} could not be loaded`, { cause: error });
    }
  }
  return kubeConfig;
}

/** The names of the contexts of the local kubeconfig; throws `KubeConfigError` when there is none. */
export function localKubeContexts(source: LocalKubeConfigSource = {}): string[] {
  return mergedKubeConfig(source)
    .getContexts()
    .map((context) => context.name);
}

/** Loads the local kubeconfig kubectl would use; throws `KubeConfigError` when there is none. */
export function loadLocalKubeConfig(source: LocalKubeConfigSource = {}): KubeConfig {
  const files = kubeconfigFiles(source);
  const kubeConfig = mergedKubeConfig(source);
  if (source.context !== undefined) {
    if (!kubeConfig.getContextObject(source.context)) {
      throw new KubeConfigError(`kubeconfig has no context ${source.context}`);
    }
    kubeConfig.setCurrentContext(source.context);
  }
  if (!kubeConfig.getCurrentCluster()) {
    throw new KubeConfigError(
      `kubeconfig ${files.join(delimiter)} has no current context with a cluster`,
    );
  }
  return acceptingPlainHttp(kubeConfig);
}

/**
 * kubectl talks to an `http://` server as written (that is how `kubectl proxy` is reached);
 * client-node refuses one unless `insecure-skip-tls-verify` is set, a flag that means nothing
 * without TLS. So plain-HTTP clusters get it, and every other cluster stays as configured.
 */
function acceptingPlainHttp(kubeConfig: KubeConfig): KubeConfig {
  if (!kubeConfig.clusters.some((cluster) => cluster.server.startsWith('http:'))) return kubeConfig;
  const rewritten = new KubeConfig();
  rewritten.loadFromOptions({
    clusters: kubeConfig.clusters.map((cluster) =>
      cluster.server.startsWith('http:') ? { ...cluster, skipTLSVerify: true } : cluster,
    ),
    users: kubeConfig.users,
    contexts: kubeConfig.contexts,
    currentContext: kubeConfig.currentContext,
  });
  return rewritten;
}

/** The files `loadLocalKubeConfig` reads, in order; empty when none applies. */
export function kubeconfigFiles(source: LocalKubeConfigSource): string[] {
  if (source.kubeconfigPath) return [source.kubeconfigPath];
  const fromEnv = (source.kubeconfigEnv ?? '').split(delimiter).filter((file) => file.length > 0);
  if (fromEnv.length > 0) return fromEnv;
  const home = source.homeDir ?? homedir();
  const fallback = join(home, '.kube', 'config');
  return existsSync(fallback) ? [fallback] : [];
}

/** One API endpoint reached with a bearer token. */
export interface BearerTokenEndpoint {
  /** Names the cluster, user and context inside the config. */
  readonly name: string;
  /** `https://...`; an `http://` server is accepted only with `skipTLSVerify` (test fakes). */
  readonly server: string;
  /** Base64 PEM of the CA (what EKS DescribeCluster returns, passed unchanged). */
  readonly caData?: string;
  readonly token: string;
  /** Only for loopback fakes: client-node refuses `http://` without it. */
  readonly skipTLSVerify?: boolean;
}

/** A `KubeConfig` for one server and one bearer token (EKS, test fakes). */
export function bearerTokenKubeConfig(endpoint: BearerTokenEndpoint): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: endpoint.name,
        server: endpoint.server,
        ...(endpoint.caData === undefined ? {} : { caData: endpoint.caData }),
        skipTLSVerify: endpoint.skipTLSVerify ?? false,
      },
    ],
    users: [{ name: endpoint.name, token: endpoint.token }],
    contexts: [{ name: endpoint.name, cluster: endpoint.name, user: endpoint.name }],
    currentContext: endpoint.name,
  });
  return kubeConfig;
}

/**
 * What berth is built from on a machine of one's own (`berth serve` and the CLI's one-shot
 * commands): the clusters' configs, where the store is, how the clusters and AWS are reached, and
 * where the local server listens. The command line parses into it (cli/options.ts).
 */
import {
  kubeconfigFromEnvironment,
  loadConfigFile,
  regionFromEnvironment,
  useAwsSettings,
} from '../config/load.js';
import type { BerthConfig } from '../config/schema.js';
import type { StoreFlags } from '../local/store-target.js';

/** The settings a local host is built from. */
export interface LocalOptions extends StoreFlags {
  /** The config of the cluster the command is for (`--cluster`, or the only one). */
  readonly config: BerthConfig;
  /** Every cluster's config (one, unless the file has a section per cluster; `--cluster`: that one). */
  readonly clusters: readonly BerthConfig[];
  /**
   * Every cluster the config names (whatever `--cluster` chose): with several, `berth serve`
   * serves each under `/clusters/<name>` (where `manifests --local` points), and `--context`
   * may name each one's context.
   */
  readonly configuredClusters: readonly string[];
  /** `--kubeconfig`: wins over `KUBECONFIG` and `~/.kube/config`. */
  readonly kubeconfig?: string;
  /** `KUBECONFIG` as the environment has it (paths joined by the OS delimiter). */
  readonly kubeconfigEnv?: string;
  readonly context?: string;
  readonly region?: string;
  readonly http: boolean;
  readonly host: string;
  /** The address a cluster reaches the local server at (certificate names, manifests). */
  readonly advertiseAddress?: string;
  /** `--new-ca` (serve, manifests --local): make a new local CA, said loudly. */
  readonly newCa?: boolean;
  readonly port: number;
  /** `serve --passes`: run the passes that change a cluster on timers. */
  readonly passes: boolean;
}

/** What a local host reads from the environment, passed in so tests control it. */
export interface LocalEnvironment {
  readonly KUBECONFIG?: string;
  /** The Region the environment names (AWS_REGION), used where `--region` is not given. */
  readonly AWS_REGION?: string;
}

/** Where a local host's settings come from besides the environment: the flags that name them. */
export interface LocalSources {
  readonly configFile?: string;
  readonly region?: string;
  readonly profile?: string;
}

/** The configs and environment a local host runs with. */
export interface LocalSetup {
  /** Every cluster the config file names (every key at its default without a file). */
  readonly clusters: BerthConfig[];
  readonly kubeconfigEnv?: string;
  /** `--region`, else the environment's. */
  readonly region?: string;
}

/**
 * Reads the config file and the environment (`environment`, when given, instead of the
 * process's), and points the AWS SDK at the Region and profile chosen: every client the host
 * builds after this reads them as the SDK's own provider chain would.
 */
export async function localSetup(
  sources: LocalSources,
  environment: LocalEnvironment = {
    KUBECONFIG: kubeconfigFromEnvironment(),
    AWS_REGION: regionFromEnvironment(),
  },
): Promise<LocalSetup> {
  const clusters = await loadConfigFile(sources.configFile);
  // An empty AWS_REGION is no Region, as the SDK reads it.
  const region = sources.region ?? (environment.AWS_REGION || undefined);
  useAwsSettings({
    ...(region ? { region } : {}),
    ...(sources.profile ? { profile: sources.profile } : {}),
  });
  return {
    clusters,
    ...(environment.KUBECONFIG ? { kubeconfigEnv: environment.KUBECONFIG } : {}),
    ...(region ? { region } : {}),
  };
}

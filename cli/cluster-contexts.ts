/**
 * Which kubeconfig context each cluster of the config is read through. `--context CONTEXT`
 * names the one cluster's; with several clusters, `--context games-a=kind-a,games-b=kind-b`
 * names each one's, and a cluster not named there is read through the context called like it.
 */
import { UsageError } from './errors.js';

/**
 * The context of each cluster (undefined: the kubeconfig's current context), given the flag, the
 * clusters served and the contexts the kubeconfig has.
 */
export function clusterContexts(
  flag: string | undefined,
  clusters: readonly string[],
  available: readonly string[],
): ReadonlyMap<string, string | undefined> {
  const several = clusters.length > 1;
  if (flag !== undefined && !flag.includes('=')) {
    if (several) {
      throw new UsageError(
        `--context ${flag}: the config has clusters ${clusters.join(', ')}; give each its context: --context ${clusters.map((name) => `${name}=CONTEXT`).join(',')}`,
      );
    }
    return new Map(clusters.map((name) => [name, flag]));
  }
  const named = new Map<string, string>();
  for (const pair of (flag ?? '').split(',').filter((part) => part.trim() !== '')) {
    const [name = '', context = ''] = pair.split('=').map((part) => part.trim());
    if (!clusters.includes(name) || context === '') {
      throw new UsageError(
        `--context ${pair}: expected CLUSTER=CONTEXT with CLUSTER one of ${clusters.join(', ')}`,
      );
    }
    named.set(name, context);
  }
  const contexts = new Map<string, string | undefined>();
  for (const name of clusters) {
    const context = named.get(name) ?? (available.includes(name) ? name : undefined);
    if (context === undefined && several) {
      throw new UsageError(
        `no kubeconfig context for cluster ${name}: pass --context ${name}=CONTEXT (the kubeconfig has ${available.join(', ') || 'none'})`,
      );
    }
    contexts.set(name, context);
  }
  return contexts;
}

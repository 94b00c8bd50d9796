/**
 * Which kubeconfig context each cluster of the config is read through, for every command that
 * reads a cluster. `--context CONTEXT` names the one cluster's (else the kubeconfig's current
 * context, as kubectl uses it); with several clusters, `--context games-a=kind-a,games-b=kind-b`
 * names each one's, and a cluster not named there is read through the context called like it.
 * Two berth clusters are never read through one context: each would take the other's pods and
 * nodes for its own.
 */
import { UsageError } from './local-errors.js';

/** What the resolution needs to know. */
export interface ContextQuery {
  /** `--context` as given. */
  readonly flag: string | undefined;
  /** The clusters to resolve (the command's: one, or every one `serve` serves). */
  readonly clusters: readonly string[];
  /** Every cluster the config names, which `CLUSTER=CONTEXT` pairs may name. */
  readonly configured: readonly string[];
  /** The kubeconfig's contexts, read only when needed (none without a kubeconfig). */
  readonly available: () => readonly string[];
}

/** The context of each cluster (undefined: the kubeconfig's current context, or no cluster). */
export function clusterContexts(query: ContextQuery): ReadonlyMap<string, string | undefined> {
  const { flag, clusters, configured } = query;
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
    if (!configured.includes(name) || context === '') {
      throw new UsageError(
        `--context ${pair}: expected CLUSTER=CONTEXT with CLUSTER one of ${configured.join(', ')}`,
      );
    }
    named.set(name, context);
  }
  const contexts = new Map<string, string | undefined>();
  // One cluster without a pair keeps the current context; several need a context each, unless
  // there is no kubeconfig at all (a local server without a cluster).
  const available = several && clusters.some((name) => !named.has(name)) ? query.available() : [];
  for (const name of clusters) {
    let context = named.get(name);
    if (context === undefined && several && available.length > 0) {
      if (!available.includes(name)) {
        throw new UsageError(
          `no kubeconfig context for cluster ${name}: pass --context ${name}=CONTEXT (the kubeconfig has ${available.join(', ')})`,
        );
      }
      context = name;
    }
    contexts.set(name, context);
  }
  const readers = new Map<string, string>();
  for (const [name, context] of contexts) {
    if (context === undefined) continue;
    const other = readers.get(context);
    if (other !== undefined) {
      throw new UsageError(
        `--context: clusters ${other} and ${name} would both be read through context ${context}; give each its own`,
      );
    }
    readers.set(context, name);
  }
  return contexts;
}

import { describe, expect, it } from 'vitest';
import { type ContextQuery, clusterContexts } from '../../shared/app/cluster-contexts.js';
import { UsageError } from '../../shared/app/local-errors.js';

const TWO = ['games-a', 'games-b'];

/** The query for `clusters` of a config naming `configured`, over a kubeconfig with `available`. */
function query(
  flag: string | undefined,
  clusters: readonly string[],
  available: readonly string[],
  configured: readonly string[] = clusters,
): ContextQuery {
  return { flag, clusters, configured, available: () => available };
}

describe('clusterContexts', () => {
  it('reads one cluster through --context, or the current context even when one is named like it', () => {
    expect([...clusterContexts(query('kind-a', ['games'], []))]).toEqual([['games', 'kind-a']]);
    expect([...clusterContexts(query(undefined, ['games'], ['games', 'kind-dev']))]).toEqual([
      ['games', undefined],
    ]);
  });

  it('reads several clusters through CLUSTER=CONTEXT pairs, else the context named like each', () => {
    const contexts = clusterContexts(query('games-b=kind-b', TWO, ['games-a', 'kind-b']));
    expect([...contexts]).toEqual([
      ['games-a', 'games-a'],
      ['games-b', 'kind-b'],
    ]);
  });

  it("picks a one-cluster command's context from the pairs, which may name the config's other clusters", () => {
    const contexts = clusterContexts(
      query('games-a=kind-a,games-b=kind-b', ['games-b'], ['kind-a', 'kind-b'], TWO),
    );
    expect([...contexts]).toEqual([['games-b', 'kind-b']]);
  });

  it('serves several clusters without reading them when there is no kubeconfig', () => {
    expect([...clusterContexts(query(undefined, TWO, []))]).toEqual([
      ['games-a', undefined],
      ['games-b', undefined],
    ]);
  });

  it('refuses a plain context for several clusters, an unknown cluster, a cluster with no context, and one context for two', () => {
    expect(() => clusterContexts(query('kind-a', TWO, []))).toThrow(
      /--context kind-a: the config has clusters games-a, games-b; give each its context: --context games-a=CONTEXT,games-b=CONTEXT/,
    );
    expect(() => clusterContexts(query('games-c=x', TWO, []))).toThrow(
      /--context games-c=x: expected CLUSTER=CONTEXT with CLUSTER one of games-a, games-b/,
    );
    expect(() => clusterContexts(query('games-a=x', TWO, ['x']))).toThrow(UsageError);
    expect(() => clusterContexts(query('games-a=x', TWO, ['x']))).toThrow(
      /no kubeconfig context for cluster games-b: pass --context games-b=CONTEXT \(the kubeconfig has x\)/,
    );
    expect(() => clusterContexts(query('games-a=kind,games-b=kind', TWO, ['kind']))).toThrow(
      /clusters games-a and games-b would both be read through context kind/,
    );
  });
});

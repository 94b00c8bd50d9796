import { describe, expect, it } from 'vitest';
import { clusterContexts } from '../../cli/cluster-contexts.js';
import { UsageError } from '../../cli/errors.js';

describe('clusterContexts', () => {
  it("reads one cluster through --context, or the kubeconfig's current context", () => {
    expect([...clusterContexts('kind-a', ['games'], [])]).toEqual([['games', 'kind-a']]);
    expect([...clusterContexts(undefined, ['games'], ['x'])]).toEqual([['games', undefined]]);
  });

  it('reads several clusters through CLUSTER=CONTEXT pairs, else the context named like each', () => {
    const contexts = clusterContexts(
      'games-b=kind-b',
      ['games-a', 'games-b'],
      ['games-a', 'kind-b'],
    );
    expect([...contexts]).toEqual([
      ['games-a', 'games-a'],
      ['games-b', 'kind-b'],
    ]);
  });

  it('refuses a plain context for several clusters, an unknown cluster, and a cluster with no context', () => {
    const clusters = ['games-a', 'games-b'];
    expect(() => clusterContexts('kind-a', clusters, [])).toThrow(
      /--context kind-a: the config has clusters games-a, games-b; give each its context: --context games-a=CONTEXT,games-b=CONTEXT/,
    );
    expect(() => clusterContexts('games-c=x', clusters, [])).toThrow(
      /--context games-c=x: expected CLUSTER=CONTEXT with CLUSTER one of games-a, games-b/,
    );
    expect(() => clusterContexts('games-a=x', clusters, ['x'])).toThrow(UsageError);
    expect(() => clusterContexts('games-a=x', clusters, ['x'])).toThrow(
      /no kubeconfig context for cluster games-b: pass --context games-b=CONTEXT \(the kubeconfig has x\)/,
    );
  });
});

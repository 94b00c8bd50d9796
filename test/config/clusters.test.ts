import { describe, expect, it } from 'vitest';
import { parseClusterConfigs } from '../../shared/config/clusters.js';
import { ConfigError } from '../../shared/config/errors.js';

describe('a config with a section per cluster', () => {
  it('is one cluster without "clusters", as before', () => {
    expect(parseClusterConfigs({ cluster: 'games' }).map((c) => c.cluster)).toEqual(['games']);
  });

  it('gives each cluster the shared keys with its section over them, objects merged one level', () => {
    const [a, b] = parseClusterConfigs({
      serviceCIDRs: ['10.100.0.0/16'],
      scale: { bufferGameServers: 20, maxNodes: 30 },
      clusters: {
        'games-a': {},
        'games-b': { serviceCIDRs: ['10.101.0.0/16'], scale: { maxNodes: 60 } },
      },
    });
    expect(a?.cluster).toBe('games-a');
    expect(a?.scale).toMatchObject({ bufferGameServers: 20, maxNodes: 30 });
    expect(b?.cluster).toBe('games-b');
    expect(b?.scale).toMatchObject({ bufferGameServers: 20, maxNodes: 60 });
    expect(String(b?.serviceCIDRs[0]?.network)).not.toBe(String(a?.serviceCIDRs[0]?.network));
  });

  it("reports every cluster's problems together, each with its section", () => {
    let problems: readonly string[] = [];
    try {
      parseClusterConfigs({
        cluster: 'x',
        clusters: { 'games-a': { scale: { maxNodes: 0 } }, Bad_Name: {}, 'games-c': 3 },
      });
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems[0]).toMatch(/^cluster: with "clusters", each section is named by its key/);
    expect(problems).toContainEqual(expect.stringMatching(/^clusters\.games-a: scale\.maxNodes/));
    expect(problems).toContainEqual(expect.stringMatching(/^clusters\.Bad_Name: cluster/));
    expect(problems).toContainEqual(
      'clusters.games-c: must be an object (use {} for the shared keys only)',
    );
  });

  it("reports a section's __proto__ keys instead of merging them away", () => {
    const problemsOf = (text: string): readonly string[] => {
      try {
        parseClusterConfigs(JSON.parse(text));
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
        throw error;
      }
      return [];
    };
    expect(
      problemsOf('{"clusters": {"a": {"__proto__": {"scale": {}}, "hostPortRanges": {}}}}'),
    ).toEqual(['clusters.a: __proto__: unknown key; remove it or check its spelling']);
    expect(
      problemsOf(
        '{"hostPortRanges": {"default": "7000-7100"}, "clusters": {"a": {"hostPortRanges": {"__proto__": "8000-8100"}}}}',
      ),
    ).toEqual(['clusters.a: hostPortRanges.__proto__: range names are lower-case DNS labels']);
    // A cluster may be named constructor: it is a DNS label like any other.
    expect(problemsOf('{"clusters": {"constructor": {}}}')).toEqual([]);
  });
});

describe('clusters sharing a node pool', () => {
  it('refuses two clusters scaling one Auto Scaling group, and lets node groups share a name', () => {
    const read = (pools: Record<string, unknown>) => () =>
      parseClusterConfigs({
        clusters: Object.fromEntries(
          Object.entries(pools).map(([name, nodePool]) => [name, { scale: { nodePool } }]),
        ),
      });
    expect(read({ a: { type: 'asg', name: 'games' }, b: { type: 'asg', name: 'games' } })).toThrow(
      /scale\.nodePool: clusters a, b all scale Auto Scaling group games; give each cluster its own group/,
    );
    expect(
      read({ a: { type: 'asg', name: 'a-games' }, b: { type: 'asg', name: 'b-games' } })(),
    ).toHaveLength(2);
    // A node group is named within its EKS cluster.
    const groups = { type: 'eks-nodegroup', name: 'games' };
    expect(read({ a: groups, b: groups })()).toHaveLength(2);
  });
});

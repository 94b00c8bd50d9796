import { describe, expect, it } from 'vitest';
import { ClusterSet, UnknownClusterError } from '../../shared/clusters/cluster-set.js';
import { parseClusterConfigs } from '../../shared/config/clusters.js';

const two = parseClusterConfigs({ clusters: { 'games-a': {}, 'games-b': {} } });
const one = parseClusterConfigs({ cluster: 'games' });

describe('ClusterSet', () => {
  it("builds each cluster's value once, on first use, from that cluster's config", () => {
    const built: string[] = [];
    const set = new ClusterSet(two, (config) => {
      built.push(config.cluster);
      return { cluster: config.cluster };
    });
    expect(built).toEqual([]);
    expect(set.get('games-b').value).toEqual({ cluster: 'games-b' });
    expect(set.get('games-b').value).toBe(set.get('games-b').value);
    expect(set.get('games-b').config.cluster).toBe('games-b');
    expect(built).toEqual(['games-b']);
    expect(set.names).toEqual(['games-a', 'games-b']);
  });

  it('refuses a cluster it does not serve, and no name where it serves several', () => {
    const set = new ClusterSet(two, (config) => config.cluster);
    expect(() => set.get('games-c')).toThrow(UnknownClusterError);
    expect(() => set.get('games-c')).toThrow(/"games-c" is not served here.*games-a, games-b/);
    expect(() => set.get(undefined)).toThrow(/no cluster named/);
  });

  it('takes no name for the one cluster of a single-cluster deployment', () => {
    const set = new ClusterSet(one, (config) => config.cluster);
    expect(set.get(undefined).value).toBe('games');
    expect(() => set.get('other')).toThrow(UnknownClusterError);
  });

  it('maps to a set over the same clusters, built from the first on first use', () => {
    let builds = 0;
    const base = new ClusterSet(two, (config) => {
      builds += 1;
      return config.cluster.length;
    });
    const mapped = base.map((length, config) => `${config.cluster}:${length}`);
    expect(builds).toBe(0);
    expect(mapped.get('games-a').value).toBe('games-a:7');
    expect(builds).toBe(1);
    expect(base.get('games-a').value).toBe(7);
    expect(builds).toBe(1);
  });
});

/**
 * One config for many clusters: the keys the clusters share at the top, and a section per
 * cluster under `clusters` that overrides them. A section's objects merge into the shared ones
 * one level deep (`"scale": { "maxNodes": 40 }` changes that key only); anything else replaces.
 * Without `clusters`, the document is one cluster's config, as before. Every cluster's problems
 * are reported together, each prefixed with its section.
 */
import { ConfigError } from './errors.js';
import { type BerthConfig, parseConfig } from './schema.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The shared keys with one cluster's section over them. */
function merged(shared: Json, section: Json): Json {
  // Built from entries (spread and fromEntries define keys): `out[key] = value` would take a
  // `__proto__` key for the prototype and drop it before the schema could report it.
  const over = Object.entries(section).map(([key, value]) => {
    const base = Object.hasOwn(shared, key) ? shared[key] : undefined;
    return [key, isObject(base) && isObject(value) ? { ...base, ...value } : value] as const;
  });
  return { ...shared, ...Object.fromEntries(over) };
}

/** Every cluster's validated config, in the document's order. */
export function parseClusterConfigs(document: unknown): BerthConfig[] {
  if (!isObject(document) || !('clusters' in document)) return [parseConfig(document)];
  const { clusters, ...shared } = document;
  const problems: string[] = [];
  if ('cluster' in shared) {
    problems.push('cluster: with "clusters", each section is named by its key; remove "cluster"');
  }
  if (!isObject(clusters) || Object.keys(clusters).length === 0) {
    throw new ConfigError([
      ...problems,
      'clusters: must be an object with a section per cluster, e.g. { "games-a": {}, "games-b": { "scale": { "maxNodes": 40 } } }',
    ]);
  }
  const configs: BerthConfig[] = [];
  for (const [name, section] of Object.entries(clusters)) {
    if (!isObject(section)) {
      problems.push(`clusters.${name}: must be an object (use {} for the shared keys only)`);
      continue;
    }
    try {
      configs.push(parseConfig({ ...merged(shared, section), cluster: name }));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems.map((line) => `clusters.${name}: ${line}`));
    }
  }
  problems.push(...sharedAutoScalingGroups(configs));
  if (problems.length > 0) throw new ConfigError(problems);
  return configs;
}

/**
 * An Auto Scaling group scaled by two clusters' passes (each with its own lease) would be sized
 * twice over and lose nodes either pass drains; a node group or Karpenter pool is the cluster's
 * own by name.
 */
function sharedAutoScalingGroups(configs: readonly BerthConfig[]): string[] {
  const byGroup = new Map<string, string[]>();
  for (const { cluster, scale } of configs) {
    if (scale.nodePool.type !== 'asg') continue;
    byGroup.set(scale.nodePool.name, [...(byGroup.get(scale.nodePool.name) ?? []), cluster]);
  }
  return [...byGroup]
    .filter(([, clusters]) => clusters.length > 1)
    .map(
      ([group, clusters]) =>
        `scale.nodePool: clusters ${clusters.join(', ')} all scale Auto Scaling group ${group}; give each cluster its own group in its section`,
    );
}

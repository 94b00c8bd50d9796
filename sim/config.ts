/**
 * The configuration a simulated day runs berth with: the user's, with the scale section pointed
 * at the day's fleet (its node labels, its game-server size, room to grow to twice its nodes).
 * Everything else (ranges, pools, settle, repair) is the user's, so the day tries their config.
 */
import type { BerthConfig } from '../shared/config/schema.js';
import { selectorLabels } from '../shared/vocabulary/label-selector.js';
import type { MachineOptions } from './machines.js';
import type { SimOptions } from './run.js';

/** `scale.nodeSelector` of the day: the label every simulated node carries. */
export const SIM_NODE_SELECTOR = 'role=game-server';
/** Those labels, as the nodes carry them. */
export const SIM_NODE_LABELS: Readonly<Record<string, string>> = selectorLabels(SIM_NODE_SELECTOR);

/** The user's config with the scale section fitted to the day's fleet. */
export function simConfig(
  config: BerthConfig,
  options: Pick<SimOptions, 'nodes' | 'gameServerCpuMillis'>,
): BerthConfig {
  return {
    ...config,
    scale: {
      ...config.scale,
      nodeSelector: SIM_NODE_SELECTOR,
      gameServerCpuMillis: options.gameServerCpuMillis,
      maxNodes: Math.max(config.scale.maxNodes, 2 * options.nodes),
    },
  };
}

/** The machines of a day under `config`: one instance type, one subnet, a 90 s provisioning. */
export function simMachines(
  config: BerthConfig,
  overrides: Partial<MachineOptions> = {},
): MachineOptions {
  return {
    instanceType: 'c5.4xlarge',
    subnetCidr: '10.0.0.0/20',
    provisionSeconds: 90,
    minSize: config.scale.minNodes,
    maxSize: config.scale.maxNodes,
    ...overrides,
  };
}

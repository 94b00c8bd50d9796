/**
 * The config's checks across fields, run on the raw document whatever else is wrong with it (a
 * schema refinement only runs once every field it reads is valid, so a third range that fails to
 * parse would hide two that overlap). Each field is read leniently: one that cannot be read here
 * is the schema's to report.
 */

import {
  formatPortRange,
  type PortRange,
  parsePortRange,
  portRangesOverlap,
} from '../net/port-range.js';
import { selectorLabels } from '../vocabulary/label-selector.js';
import { KARPENTER_NODE_POOL_LABEL } from '../vocabulary/labels.js';
import { RECORD_KEY_RULES } from './record-keys.js';

/** Auto Mode's built-in NodePools; they cannot be changed, only enabled or disabled. */
export const BUILT_IN_NODE_POOLS = ['general-purpose', 'system'] as const;

type Document = Readonly<Record<string, unknown>>;

const DEFAULT_HOST_PORT_RANGES: Document = { default: '7000-8000' };
const DEFAULT_NODE_PORT_RANGE = '30000-32767';
const DEFAULT_NODE_SELECTOR = 'role=game-server';

const objectAt = (value: unknown): Document | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Document)
    : undefined;

const rangeOf = (value: unknown): PortRange | undefined => {
  if (typeof value !== 'string') return undefined;
  const parsed = parsePortRange(value);
  return typeof parsed === 'string' ? undefined : parsed;
};

const numberOr = (value: unknown, fallback: number): number | undefined =>
  value === undefined ? fallback : typeof value === 'number' ? value : undefined;

/**
 * Node pool `auto-mode` on a built-in NodePool: its nodes carry only the labels Auto Mode gives
 * them (a built-in NodePool cannot be changed), so the scale pass must select them by pool.
 */
function autoModeSelectorProblems(scale: Document | undefined): string[] {
  const pool = objectAt(scale?.nodePool);
  if (pool?.type !== 'auto-mode') return [];
  const name = pool.name ?? 'general-purpose';
  const selector = scale?.nodeSelector ?? DEFAULT_NODE_SELECTOR;
  if (typeof name !== 'string' || typeof selector !== 'string') return [];
  if (!(BUILT_IN_NODE_POOLS as readonly string[]).includes(name)) return [];
  if (selectorLabels(selector)[KARPENTER_NODE_POOL_LABEL] === name) return [];
  return [
    `scale.nodeSelector: "${selector}" selects no node of the EKS Auto Mode built-in NodePool ${name} (its nodes carry only the labels Auto Mode gives them); use "${KARPENTER_NODE_POOL_LABEL}=${name}"`,
  ];
}

/**
 * A `__proto__` key of a map keyed by names (JSON.parse keeps it as an own key): never a valid
 * name, and the schema drops it without a word, so it is reported here.
 */
function prototypeKeyProblems(document: Document): string[] {
  return Object.entries(RECORD_KEY_RULES).flatMap(([field, rule]) => {
    const map = objectAt(document[field]);
    return map && Object.hasOwn(map, '__proto__') ? [`${field}.__proto__: ${rule.message}`] : [];
  });
}

/** Problems between fields, one line each, key path first. */
export function crossFieldProblems(raw: unknown): string[] {
  const document = objectAt(raw);
  if (!document) return [];
  const problems: string[] = [...prototypeKeyProblems(document)];

  if (Array.isArray(document.serviceCIDRs) && document.serviceCIDRs.length > 2) {
    problems.push('serviceCIDRs: takes at most two CIDRs, one per IP family');
  }

  const hostRanges = objectAt(document.hostPortRanges ?? DEFAULT_HOST_PORT_RANGES) ?? {};
  const nodePorts = rangeOf(document.nodePortRange ?? DEFAULT_NODE_PORT_RANGE);
  const parsed = Object.entries(hostRanges).flatMap(([name, value]) => {
    const range = rangeOf(value);
    return range ? [[name, range] as const] : [];
  });
  for (const [i, [name, range]] of parsed.entries()) {
    for (const [other, otherRange] of parsed.slice(0, i)) {
      if (portRangesOverlap(range, otherRange)) {
        problems.push(
          `hostPortRanges.${name}: ${formatPortRange(range)} overlaps range "${other}" (${formatPortRange(otherRange)}); named host port ranges must not share any port, end ports included`,
        );
      }
    }
    if (nodePorts && portRangesOverlap(range, nodePorts)) {
      problems.push(
        `hostPortRanges.${name}: ${formatPortRange(range)} overlaps nodePortRange ${formatPortRange(nodePorts)}; kube-proxy opens node ports on every node`,
      );
    }
  }

  const scale = objectAt(document.scale ?? {});
  const minNodes = numberOr(scale?.minNodes, 1);
  const maxNodes = numberOr(scale?.maxNodes, 10);
  if (minNodes !== undefined && maxNodes !== undefined && maxNodes < minNodes) {
    problems.push(
      `scale.maxNodes: maxNodes must be at least minNodes (maxNodes ${maxNodes}, minNodes ${minNodes})`,
    );
  }
  problems.push(...autoModeSelectorProblems(scale));
  const eni = objectAt(document.eni ?? {});
  const minIdle = numberOr(eni?.minIdle, 2);
  const maxIdle = numberOr(eni?.maxIdle, 8);
  if (minIdle !== undefined && maxIdle !== undefined && maxIdle < minIdle) {
    problems.push(
      `eni.maxIdle: maxIdle must be at least minIdle (maxIdle ${maxIdle}, minIdle ${minIdle})`,
    );
  }
  problems.push(...frontsProblems(objectAt(document.fronts), hostRanges));
  return problems;
}

/**
 * The accelerator's range must be a configured host port range: the endpoint group's destination
 * ports are that range, and only ports fronted by the accelerator are handed out from it. A TCP
 * health check has no path.
 */
function frontsProblems(fronts: Document | undefined, hostRanges: Document): string[] {
  const problems: string[] = [];
  const range = objectAt(fronts?.accelerator)?.range;
  if (typeof range === 'string' && range !== '' && !Object.hasOwn(hostRanges, range)) {
    problems.push(
      `fronts.accelerator.range: "${range}" is not a host port range; name one of ${Object.keys(
        hostRanges,
      )
        .map((name) => `"${name}"`)
        .join(', ')} (add one kept for the accelerator to hostPortRanges)`,
    );
  }
  problems.push(...slotsProblems(objectAt(fronts?.nlb), range, hostRanges));
  const healthCheck = objectAt(objectAt(fronts?.nlb)?.healthCheck);
  if (healthCheck?.protocol === 'TCP' && healthCheck.path !== undefined) {
    problems.push(
      'fronts.nlb.healthCheck.path: Forbidden: a TCP health check has no path; leave path out or use "protocol": "HTTP"',
    );
  }
  return problems;
}

/**
 * Slots mode makes a listener for every port of `fronts.nlb.range` on every game node, so the
 * range must be a host port range, kept for NLB fronts alone (not the accelerator's), and named
 * only in slots mode.
 */
function slotsProblems(
  nlb: Document | undefined,
  acceleratorRange: unknown,
  hostRanges: Document,
): string[] {
  const range = nlb?.range;
  const names = Object.keys(hostRanges)
    .map((name) => `"${name}"`)
    .join(', ');
  if (nlb?.mode !== 'slots') {
    return range === undefined
      ? []
      : [
          'fronts.nlb.range: Forbidden: a range of slots is for "mode": "slots"; set the mode or leave range out',
        ];
  }
  if (typeof range !== 'string' || range === '') {
    return [
      `fronts.nlb.range: Required: slots mode makes a listener for each port of one host port range on every game node; name one of ${names}`,
    ];
  }
  if (!Object.hasOwn(hostRanges, range)) {
    return [
      `fronts.nlb.range: "${range}" is not a host port range; name one of ${names} (add one kept for NLB slots to hostPortRanges)`,
    ];
  }
  if (range === acceleratorRange) {
    return [
      `fronts.nlb.range: "${range}" is the Global Accelerator's range; keep another host port range for NLB slots`,
    ];
  }
  return [];
}

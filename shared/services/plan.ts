/**
 * What a Service needs from berth's ranges, with the kube-apiserver's Service semantics: IP
 * families and policies, immutable cluster IPs, node ports shared across protocols, the health
 * check node port, and what an update keeps, adds and drops. Pure: no I/O.
 */

import type { Grant, ValueRequest } from '../allocation/allocator.js';
import { type IpFamily, parseIp } from '../net/ip.js';
import type { ValueRange } from '../net/value-range.js';
import { ALLOCATION_ID_ANNOTATION } from '../vocabulary/labels.js';
import {
  type JsonPatch,
  type JsonPatchOperation,
  pointer,
  setMetadataEntries,
} from '../vocabulary/patch.js';
import { ServiceFieldError } from './errors.js';
import type { Service, ServiceSpec } from './service-spec.js';

/** The ranges Services draw from. */
export interface ServiceRanges {
  /**
   * The cluster IP ranges in order: the first one's family is the default; a family's first range
   * is where its dynamic picks come from.
   */
  readonly clusterIps: readonly ValueRange[];
  readonly nodePorts: ValueRange;
}

/** Everything one Service should hold, and how the answer patches it. */
export interface ServicePlan {
  /**
   * Slots are identities (`clusterIP/IPv4`, `nodePort/<port name>`), not positions: an update that
   * reorders entries keeps their values, one that renames a port gets a new node port, as upstream.
   */
  readonly requests: readonly ValueRequest[];
  /** Slot → the field path a denial names, e.g. `spec.ports[1].nodePort`. */
  readonly fields: ReadonlyMap<string, string>;
  /** Families and policy to write, absent when the Service has no cluster IP (headless, ExternalName). */
  readonly clusterIp?: { readonly families: readonly IpFamily[]; readonly policy: string };
  /** `spec.ports` index → the slot whose node port that entry gets. */
  readonly nodePortSlots: ReadonlyMap<number, string>;
  /** `spec.ports` indexes whose nodePort the new type no longer allows (NodePort → ClusterIP). */
  readonly strippedNodePorts: readonly number[];
  readonly healthCheckSlot?: string;
  readonly stripHealthCheck: boolean;
}

const HEALTH_CHECK_SLOT = 'healthCheckNodePort';
const HEALTH_CHECK_FIELD = 'spec.healthCheckNodePort';
const clusterIpSlot = (family: IpFamily) => `clusterIP/${family}`;
const clusterIpField = (i: number) => `spec.clusterIPs[${i}]`;
const nodePortSlot = (name: string | undefined) => `nodePort/${name ?? ''}`;
const nodePortField = (i: number) => `spec.ports[${i}].nodePort`;

const hasNodePorts = (spec: ServiceSpec | undefined) =>
  spec?.type === 'NodePort' || spec?.type === 'LoadBalancer';
const needsHealthCheck = (spec: ServiceSpec | undefined) =>
  spec?.type === 'LoadBalancer' && spec.externalTrafficPolicy === 'Local';

function clusterIpsOf(spec: ServiceSpec | undefined): string[] {
  if (!spec || spec.type === 'ExternalName') return [];
  if (spec.clusterIPs && spec.clusterIPs.length > 0) return [...spec.clusterIPs];
  return spec.clusterIP ? [spec.clusterIP] : [];
}

/** Plans a Service on CREATE (`old` absent) or UPDATE; throws ServiceFieldError for bad fields. */
export function planService(
  service: Service,
  old: Service | undefined,
  ranges: ServiceRanges,
): ServicePlan {
  const spec = service.spec;
  const ips = planClusterIps(spec, old?.spec, ranges);
  const ports = planNodePorts(spec, old?.spec, ranges.nodePorts);
  const health = planHealthCheck(spec, old?.spec, ranges.nodePorts);
  return {
    requests: [...(ips?.requests ?? []), ...ports.requests, ...health.requests],
    fields: new Map([...(ips?.fields ?? []), ...ports.fields, ...health.fields]),
    ...(ips ? { clusterIp: { families: ips.families, policy: ips.policy } } : {}),
    nodePortSlots: ports.slots,
    strippedNodePorts: ports.stripped,
    ...(health.requests.length > 0 ? { healthCheckSlot: HEALTH_CHECK_SLOT } : {}),
    stripHealthCheck: health.strip,
  };
}

/**
 * `spec.ipFamilies` as the apiserver validates it (kubernetes pkg/apis/core/validation
 * `ValidateService`: each family at most once, so at most one entry per family): a list berth
 * let through would be refused by the apiserver after berth had allocated for it.
 */
function checkIpFamilies(ipFamilies: readonly IpFamily[] | undefined): void {
  if (ipFamilies === undefined) return;
  if (ipFamilies.length > 2) {
    throw new ServiceFieldError(
      'spec.ipFamilies',
      ipFamilies,
      'may not have more than two entries, one per IP family',
    );
  }
  const repeated = ipFamilies.findIndex((family, i) => ipFamilies.indexOf(family) !== i);
  if (repeated >= 0) {
    throw new ServiceFieldError(
      `spec.ipFamilies[${repeated}]`,
      ipFamilies[repeated],
      'Duplicate value: each IP family may be listed once',
    );
  }
}

function planClusterIps(spec: ServiceSpec, old: ServiceSpec | undefined, ranges: ServiceRanges) {
  if (spec.type === 'ExternalName') return undefined;
  checkIpFamilies(spec.ipFamilies);
  if (spec.clusterIP && spec.clusterIPs?.length && spec.clusterIP !== spec.clusterIPs[0]) {
    throw new ServiceFieldError(
      clusterIpField(0),
      spec.clusterIPs[0],
      'must match `clusterIP` when both are specified',
    );
  }
  let requested = clusterIpsOf(spec);
  const previous = clusterIpsOf(old);
  const policy = spec.ipFamilyPolicy ?? 'SingleStack';
  // A downgrade: a dual-stack Service updated to SingleStack keeps its first IP and family only;
  // the apiserver trims both lists itself after admission (trimFieldsForDualStackDowngrade).
  const downgrade =
    spec.ipFamilyPolicy === 'SingleStack' &&
    (old?.ipFamilyPolicy === 'PreferDualStack' || old?.ipFamilyPolicy === 'RequireDualStack');
  const ipFamilies = downgrade ? spec.ipFamilies?.slice(0, 1) : spec.ipFamilies;
  if (previous.length > 0 && previous[0] !== 'None') {
    // As the apiserver does: an update that leaves the cluster IPs empty keeps the old ones, and
    // one that keeps `clusterIP` but leaves `clusterIPs` empty keeps the old list.
    const keepsList =
      !spec.clusterIPs?.length && requested.length === 1 && requested[0] === previous[0];
    if (keepsList || requested.every((ip) => ip === '')) requested = [...previous];
    if (downgrade) requested = requested.slice(0, 1);
    for (let i = 0; i < Math.min(requested.length, previous.length); i++) {
      if (requested[i] !== previous[i])
        throw new ServiceFieldError(clusterIpField(i), requested[i], 'may not change once set');
    }
    if (requested.length < previous.length && policy !== 'SingleStack') {
      throw new ServiceFieldError(
        'spec.ipFamilyPolicy',
        policy,
        "must be set to 'SingleStack' when releasing the secondary clusterIP",
      );
    }
  }
  if (requested[0] === 'None') {
    if (spec.type !== 'ClusterIP') {
      throw new ServiceFieldError(
        clusterIpField(0),
        'None',
        "may only be set when `type` is 'ClusterIP'",
      );
    }
    return undefined;
  }
  const parsed = requested.map((ip, i) => {
    if (ip === '') return undefined;
    const address = parseIp(ip);
    if (!address)
      throw new ServiceFieldError(
        clusterIpField(i),
        ip,
        'must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)',
      );
    return address;
  });

  const configured = [...new Set(ranges.clusterIps.map((r) => r.family))];
  const first = ipFamilies?.[0] ?? parsed[0]?.family ?? configured[0];
  if (ipFamilies?.[0] && parsed[0] && parsed[0].family !== ipFamilies[0]) {
    throw new ServiceFieldError(
      'spec.ipFamilies[0]',
      ipFamilies[0],
      `must match the family of spec.clusterIPs[0] (${requested[0]})`,
    );
  }
  if (first === undefined || !configured.includes(first)) {
    const field = ipFamilies?.[0] ? 'spec.ipFamilies[0]' : clusterIpField(0);
    throw new ServiceFieldError(
      field,
      ipFamilies?.[0] ?? requested[0],
      `${first} is not configured on this cluster (configured: ${configured.join(', ')})`,
    );
  }
  const second = configured.find((family) => family !== first);
  const asked = Math.max(requested.length, ipFamilies?.length ?? 0);
  let families: IpFamily[];
  if (policy === 'SingleStack') {
    if (asked > 1) {
      throw new ServiceFieldError(
        'spec.ipFamilyPolicy',
        policy,
        "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
      );
    }
    families = [first];
  } else if (policy === 'RequireDualStack') {
    if (!second)
      throw new ServiceFieldError(
        'spec.ipFamilyPolicy',
        policy,
        'this cluster is not configured for dual-stack services',
      );
    families = [first, second];
  } else {
    // PreferDualStack: an unchanged single-stack Service is not upgraded on update (apiserver rule).
    const keepSingle =
      old?.ipFamilyPolicy === 'PreferDualStack' && previous.length === 1 && requested.length <= 1;
    families = second && !keepSingle ? [first, second] : [first];
  }
  if (ipFamilies?.[1] && ipFamilies[1] !== families[1]) {
    throw new ServiceFieldError(
      'spec.ipFamilies[1]',
      ipFamilies[1],
      families[1]
        ? `must be ${families[1]}`
        : 'this cluster is not configured for dual-stack services',
    );
  }
  if (requested.length > families.length) {
    throw new ServiceFieldError(
      clusterIpField(families.length),
      requested[families.length],
      'has more cluster IPs than IP families',
    );
  }
  const requests = families.map((family, i): ValueRequest => {
    const value = requested[i];
    // A requested IP is drawn from the range that holds it (a family may have several when the
    // cluster's ServiceCIDRs are followed); a dynamic pick from the family's first range.
    const range =
      (value ? ranges.clusterIps.find((r) => r.offsetOf(value) !== undefined) : undefined) ??
      ranges.clusterIps.find((r) => r.family === family);
    if (!range)
      throw new ServiceFieldError('spec.ipFamilies', families, 'not configured on this cluster');
    const ip = parsed[i];
    if (ip && ip.family !== family)
      throw new ServiceFieldError(clusterIpField(i), requested[i], `expected an ${family} address`);
    const slot = clusterIpSlot(family);
    return value ? { slot, range, value } : { slot, range };
  });
  const fields = new Map(families.map((family, i) => [clusterIpSlot(family), clusterIpField(i)]));
  return { requests, families, policy, fields };
}

function planNodePorts(spec: ServiceSpec, old: ServiceSpec | undefined, range: ValueRange) {
  const seen = new Set<string>();
  for (const [i, p] of spec.ports.entries()) {
    const key = `${p.port}/${p.protocol}`;
    if (seen.has(key))
      throw new ServiceFieldError(
        `spec.ports[${i}]`,
        key,
        'Duplicate value: port and protocol already listed',
      );
    seen.add(key);
  }
  const withNodePort = spec.ports.flatMap((p, i) => (p.nodePort ? [i] : []));
  if (!hasNodePorts(spec)) {
    // NodePort/LoadBalancer → ClusterIP drops the ports (the apiserver's dropTypeDependentFields).
    const first = withNodePort[0];
    if (first !== undefined && !hasNodePorts(old)) {
      throw new ServiceFieldError(
        nodePortField(first),
        spec.ports[first]?.nodePort,
        `may not be used when \`type\` is '${spec.type}'`,
      );
    }
    return {
      requests: [],
      slots: new Map<number, string>(),
      fields: new Map<string, string>(),
      stripped: withNodePort,
    };
  }
  const allocateDynamic = spec.type === 'NodePort' || spec.allocateLoadBalancerNodePorts !== false;
  // An entry updated with nodePort 0 keeps the one its name had, unless another entry took it.
  const wanted = spec.ports.map((p) => p.nodePort || undefined);
  if (hasNodePorts(old)) {
    for (const [i, p] of spec.ports.entries()) {
      if (wanted[i]) continue;
      const before = old?.ports.find(
        (o) => (o.name ?? '') === (p.name ?? '') && o.nodePort,
      )?.nodePort;
      if (before && !wanted.includes(before)) wanted[i] = before;
    }
  }
  // An entry without a node port takes the one its same-numbered sibling of another protocol asked for.
  for (const [i, p] of spec.ports.entries()) {
    if (wanted[i]) continue;
    const sibling = spec.ports.findIndex(
      (q, j) => q.port === p.port && q.protocol !== p.protocol && wanted[j],
    );
    if (sibling >= 0) wanted[i] = wanted[sibling];
  }
  const requests: ValueRequest[] = [];
  const slots = new Map<number, string>();
  const fields = new Map<string, string>();
  interface Share {
    readonly slot: string;
    readonly protocols: Set<string>;
  }
  const byValue = new Map<number, Share>();
  const byPort = new Map<number, Share>();
  for (const [i, p] of spec.ports.entries()) {
    const value = wanted[i];
    const shared = value ? byValue.get(value) : byPort.get(p.port);
    if (shared) {
      if (shared.protocols.has(p.protocol)) {
        if (value)
          throw new ServiceFieldError(
            nodePortField(i),
            value,
            'Duplicate value: node port already used by this protocol',
          );
      } else {
        // The same port number over another protocol shares one node port, as in the apiserver.
        shared.protocols.add(p.protocol);
        slots.set(i, shared.slot);
        continue;
      }
    }
    if (!value && !allocateDynamic) continue;
    const share: Share = { slot: nodePortSlot(p.name), protocols: new Set([p.protocol]) };
    fields.set(share.slot, nodePortField(i));
    requests.push(
      value ? { slot: share.slot, range, value: String(value) } : { slot: share.slot, range },
    );
    slots.set(i, share.slot);
    if (value) byValue.set(value, share);
    if (!byPort.has(p.port)) byPort.set(p.port, share);
  }
  return { requests, slots, fields, stripped: [] as number[] };
}

function planHealthCheck(spec: ServiceSpec, old: ServiceSpec | undefined, range: ValueRange) {
  if (!needsHealthCheck(spec)) {
    if (spec.healthCheckNodePort && !needsHealthCheck(old)) {
      throw new ServiceFieldError(
        HEALTH_CHECK_FIELD,
        spec.healthCheckNodePort,
        "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
      );
    }
    return {
      requests: [] as ValueRequest[],
      fields: new Map<string, string>(),
      strip: Boolean(spec.healthCheckNodePort),
    };
  }
  const value =
    spec.healthCheckNodePort || (needsHealthCheck(old) ? old?.healthCheckNodePort : undefined);
  const request: ValueRequest = value
    ? { slot: HEALTH_CHECK_SLOT, range, value: String(value) }
    : { slot: HEALTH_CHECK_SLOT, range };
  return {
    requests: [request],
    fields: new Map([[HEALTH_CHECK_SLOT, HEALTH_CHECK_FIELD]]),
    strip: false,
  };
}

/** The JSON patch that writes a plan's grants into the Service, changing only what differs. */
export function servicePatch(
  service: Service,
  plan: ServicePlan,
  grants: readonly Grant[],
  allocationId: string,
): JsonPatch {
  const spec = service.spec;
  const grantedValue = new Map(grants.map((g) => [g.slot, g.value]));
  const ops: JsonPatchOperation[] = [];
  const set = (path: string, current: unknown, value: unknown) => {
    if (JSON.stringify(current) !== JSON.stringify(value)) ops.push({ op: 'add', path, value });
  };
  if (plan.clusterIp) {
    const ips = plan.clusterIp.families.map(
      (family) => grantedValue.get(clusterIpSlot(family)) ?? '',
    );
    set(pointer('spec', 'clusterIP'), spec.clusterIP, ips[0]);
    set(pointer('spec', 'clusterIPs'), spec.clusterIPs, ips);
    set(pointer('spec', 'ipFamilies'), spec.ipFamilies, plan.clusterIp.families);
    set(pointer('spec', 'ipFamilyPolicy'), spec.ipFamilyPolicy, plan.clusterIp.policy);
  }
  for (const [i, slot] of plan.nodePortSlots) {
    set(
      pointer('spec', 'ports', i, 'nodePort'),
      spec.ports[i]?.nodePort,
      Number(grantedValue.get(slot)),
    );
  }
  for (const i of plan.strippedNodePorts)
    ops.push({ op: 'remove', path: pointer('spec', 'ports', i, 'nodePort') });
  if (plan.healthCheckSlot) {
    set(
      pointer('spec', 'healthCheckNodePort'),
      spec.healthCheckNodePort,
      Number(grantedValue.get(plan.healthCheckSlot)),
    );
  }
  if (plan.stripHealthCheck)
    ops.push({ op: 'remove', path: pointer('spec', 'healthCheckNodePort') });
  if (
    grants.length > 0 &&
    service.metadata.annotations?.[ALLOCATION_ID_ANNOTATION] !== allocationId
  ) {
    ops.push(
      ...setMetadataEntries(service.metadata, 'annotations', {
        [ALLOCATION_ID_ANNOTATION]: allocationId,
      }),
    );
  }
  return ops;
}

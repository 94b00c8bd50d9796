/**
 * `pods/binding` CREATE: where the game server can be reached. The Binding
 * names the pod and the target node but carries none of the pod's annotations, so the pod is read
 * through the Kubernetes API; for a berth pod the Binding gets `berth.dev/node` and
 * `berth.dev/address`, which the apiserver copies onto the pod as it binds it. A berth pod is
 * refused a node berth is removing (removal-guard.ts).
 */
import type { V1NodeAddress } from '@kubernetes/client-node';
import type { NodeAddressType } from '../config/schema.js';
import { type BindingFrontsDeps, frontsAtBinding } from '../fronts/binding-fronts.js';
import { frontedPortsOf, toldFronts } from '../fronts/pod-fronts.js';
import type { PodNameStore, PodPortRecord } from '../hostports/store.js';
import type { AllocationCarriers } from '../k8s/allocation-carriers.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { KubernetesApiError } from '../k8s/errors.js';
import { NodeCache } from '../k8s/node-cache.js';
import { parseIp } from '../net/ip.js';
import { carriedAllocationId } from '../vocabulary/allocation-id.js';
import {
  ADDRESS_ANNOTATION,
  ALLOCATION_ID_ANNOTATION,
  FRONTS_ANNOTATION,
  NODE_ANNOTATION,
} from '../vocabulary/labels.js';
import { objectAt, stringAt } from '../vocabulary/opaque.js';
import { setMetadataEntries } from '../vocabulary/patch.js';
import type { AdmissionHandler } from './dispatch.js';
import { isRecordsPod } from './pod-identity.js';
import { nodeForGameServer } from './removal-guard.js';
import { allow } from './response.js';

/** What the binding handler needs. */
export interface PodBindingAdmissionDeps {
  /** Pods are read directly (a binding happens once per pod); nodes through `nodes`. */
  readonly cluster: Pick<ClusterApi, 'getPod' | 'getNode'>;
  /** Precedence of address types, from the config. */
  readonly nodeAddressTypes: readonly NodeAddressType[];
  /** Epoch milliseconds, for the node cache. */
  readonly now: () => number;
  /**
   * Where nodes are read; a short-lived `NodeCache` over `cluster` when absent, so a burst of
   * bindings onto one node (the packing affinity makes that the norm) reads it once.
   */
  readonly nodes?: Pick<ClusterApi, 'getNode'>;
  /**
   * The pods' host port records: the binding acts for an allocation only for the pod its record
   * was written for (./pod-identity.ts), and teaches a generateName pod's record its name.
   * Without them no pod is told fronts.
   */
  readonly records?: PodNameStore;
  /** The stored pods that carry an id: what tells a generateName pod from its copies. */
  readonly carriers?: AllocationCarriers;
  /** Public fronts, when the config has any: addresses written, their making queued. */
  readonly fronts?: BindingFrontsDeps;
}

/**
 * The pod's host port record when the pod is the one it was written for; `other` when it is
 * another pod's (or none), undefined when berth could not tell (no records, a store that did not
 * answer).
 */
async function ownRecord(
  deps: PodBindingAdmissionDeps,
  id: string,
  pod: JsonObject,
  dryRun: boolean,
): Promise<PodPortRecord | 'other' | undefined> {
  const records = deps.records;
  if (records === undefined) return undefined;
  try {
    const record = await records.getRecord(id);
    if (record === undefined) return 'other';
    const own = await isRecordsPod(deps.carriers, record, pod, dryRun ? undefined : records);
    return own ? record : 'other';
  } catch {
    return undefined;
  }
}

const IP_TYPES: ReadonlySet<string> = new Set(['ExternalIP', 'InternalIP']);
const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);

function usable(type: string, address: string): boolean {
  if (IP_TYPES.has(type)) return parseIp(address) !== undefined;
  // DNS and Hostname types: an RFC 1123 subdomain, as the apiserver validates names.
  return address.length <= 253 && DNS_SUBDOMAIN.test(address.toLowerCase());
}

/**
 * The address to publish: the first type in `precedence` for which the node has a usable address,
 * and of that type the first usable one in `status.addresses` order (IP types skip values that
 * do not parse as IPs). Undefined when none is usable. Pure.
 */
export function chooseNodeAddress(
  addresses: readonly Pick<V1NodeAddress, 'type' | 'address'>[],
  precedence: readonly NodeAddressType[],
): string | undefined {
  for (const type of precedence) {
    const found = addresses.find((a) => a.type === type && usable(type, a.address.trim()));
    if (found) return found.address.trim();
  }
  return undefined;
}

type JsonObject = Readonly<Record<string, unknown>>;

/**
 * What the Kubernetes API answered instead of the object (a 403, a 431, a 5xx, a body that is no
 * JSON), or undefined for an error that is no answer of the API: no answer at all is an outage,
 * answered 503 (../http/unavailable.ts). The binding goes on without what berth would have read.
 */
function answeredInstead(error: unknown): string | undefined {
  if (!(error instanceof KubernetesApiError) || error.statusCode === undefined) return undefined;
  const detail = error.status?.message ?? error.message;
  return `the Kubernetes API answered ${error.statusCode} ${error.reason}: ${detail}`;
}

/** Runs a read; what the API answered instead, when it answered something else. */
async function read<T>(
  run: () => Promise<T>,
): Promise<{ readonly value: T } | { readonly answered: string }> {
  try {
    return { value: await run() };
  } catch (error) {
    const answered = answeredInstead(error);
    if (answered === undefined) throw error;
    return { answered };
  }
}

/** The `pods/binding` admission handler. */
export function podBindingAdmission(deps: PodBindingAdmissionDeps): AdmissionHandler {
  const nodes = deps.nodes ?? new NodeCache({ source: deps.cluster, now: deps.now });
  return async (request) => {
    if (request.operation !== 'CREATE' || !request.object) return allow();
    const binding = request.object;
    // An empty name is no name: the request's own, then nothing.
    const podName = stringAt(binding, 'metadata', 'name') || request.name || undefined;
    const namespace =
      request.namespace ?? (stringAt(binding, 'metadata', 'namespace') || 'default');
    const nodeName = stringAt(binding, 'target', 'name') || undefined;
    if (podName === undefined || nodeName === undefined) return allow();

    // A pod berth cannot read: nothing is learned, claimed or queued from it, and the binding,
    // which berth must not block, goes on without annotations.
    const podRead = await read(() => deps.cluster.getPod(namespace, podName));
    if ('answered' in podRead) {
      return allow(undefined, [
        `${NODE_ANNOTATION}: pod ${namespace}/${podName} could not be read (${podRead.answered}), so berth added no annotations`,
      ]);
    }
    const pod = podRead.value;
    if (pod === undefined) {
      return allow(undefined, [
        `${NODE_ANNOTATION}: pod ${namespace}/${podName} was not found, so berth added no annotations`,
      ]);
    }
    // An id not of berth's shape is no id (a hand-written or mangled annotation): untouched.
    const allocationId = carriedAllocationId(pod as JsonObject);
    if (allocationId === undefined) return allow();
    // The fronts are the allocation's, so only its own pod is told them or put behind them. A
    // store that does not answer costs the fronts (the fronts pass makes them), never the binding.
    // The record is read only when there is something to decide: fronts, or a name to learn.
    const asked = frontedPortsOf(pod as JsonObject).length > 0;
    const record =
      asked || stringAt(pod as JsonObject, 'metadata', 'generateName')
        ? await ownRecord(deps, allocationId, pod as JsonObject, request.dryRun === true)
        : undefined;

    const entries: Record<string, string> = { [NODE_ANNOTATION]: nodeName };
    const warnings: string[] = [];
    const nodeRead = await read(() =>
      nodeForGameServer(
        { cached: nodes, current: deps.cluster },
        nodeName,
        `${namespace}/${podName}`,
        'target.name',
      ),
    );
    const { node, refused } = 'answered' in nodeRead ? { node: undefined } : nodeRead.value;
    if (refused) return refused;
    if ('answered' in nodeRead) {
      warnings.push(
        `${ADDRESS_ANNOTATION}: node ${nodeName} could not be read (${nodeRead.answered}); no address annotation`,
      );
    } else if (node === undefined) {
      warnings.push(`${ADDRESS_ANNOTATION}: node ${nodeName} was not found; no address annotation`);
    } else {
      const address = chooseNodeAddress(node.status?.addresses ?? [], deps.nodeAddressTypes);
      if (address === undefined) {
        warnings.push(
          `${ADDRESS_ANNOTATION}: node ${nodeName} has no usable address of type ${deps.nodeAddressTypes.join(', ')}; no address annotation`,
        );
      } else {
        entries[ADDRESS_ANNOTATION] = address;
      }
    }
    const fronted =
      deps.fronts === undefined || record === undefined || record === 'other'
        ? []
        : frontedPortsOf(pod as JsonObject, record.ports);
    if (record === 'other' && asked) {
      // A copy of another game server: the addresses it carries are that one's, and go.
      entries[FRONTS_ANNOTATION] = '{}';
      warnings.push(
        `${FRONTS_ANNOTATION}: ${ALLOCATION_ID_ANNOTATION} ${allocationId} is not this pod's allocation; no public address`,
      );
    }
    if (deps.fronts !== undefined && fronted.length > 0) {
      const fronts = await frontsAtBinding(deps.fronts, {
        namespace,
        pod: podName,
        allocationId,
        node: nodeName,
        nodeAddress: chooseNodeAddress(node?.status?.addresses ?? [], ['InternalIP']),
        ports: fronted,
        told: toldFronts(pod as JsonObject),
        dryRun: request.dryRun === true,
      });
      // Written whole, whatever is known: an address the pod carries from elsewhere never stays.
      entries[FRONTS_ANNOTATION] = JSON.stringify(Object.fromEntries(fronts.addresses));
      warnings.push(...fronts.warnings.map((warning) => `${FRONTS_ANNOTATION}: ${warning}`));
    }
    return allow(
      setMetadataEntries(objectAt(binding, 'metadata'), 'annotations', entries),
      warnings,
    );
  };
}

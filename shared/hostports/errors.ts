/** Host port allocation failures, each typed so the admission handler maps it to an answer. */
import type { BlockCounts } from './store.js';

/**
 * A count rose above the level the choice saw before the write (another pod took the port):
 * choose again, from the count items as the refused write found them.
 */
export class HostPortConflictError extends Error {
  readonly blocks: readonly BlockCounts[];
  constructor(message: string, options?: { blocks?: readonly BlockCounts[]; cause?: unknown }) {
    super(message, options);
    this.name = 'HostPortConflictError';
    this.blocks = options?.blocks ?? [];
  }
}

/** The allocation id is stored already (a 100-bit id collided, or a record was written twice). */
export class AllocationIdTakenError extends Error {
  readonly id: string;
  constructor(id: string, options?: { cause?: unknown }) {
    super(`allocation id ${id} is already stored`, options);
    this.name = 'AllocationIdTakenError';
    this.id = id;
  }
}

/** Every attempt lost a race: the request fails (409) and the apiserver's caller retries it. */
export class HostPortContentionError extends Error {
  readonly ranges: readonly string[];
  readonly attempts: number;
  constructor(ranges: readonly string[], attempts: number, options?: { cause?: unknown }) {
    super(
      `could not allocate host ports in range ${ranges.map((r) => `"${r}"`).join(', ')} after ${attempts} concurrent conflicts; retry the request`,
      options,
    );
    this.name = 'HostPortContentionError';
    this.ranges = ranges;
    this.attempts = attempts;
  }
}

/**
 * No block of the size asked fits the range: every run of that many consecutive ports holds one
 * this pod takes already or one held by a pod berth never admitted. Denied 409.
 */
export class HostPortBlockError extends Error {
  readonly range: string;
  readonly size: number;
  readonly largest: number;
  constructor(
    path: string,
    size: number,
    range: { readonly name: string; readonly first: number; readonly size: number },
    largest: number,
  ) {
    super(
      `${path}: range is full for a block of ${size} consecutive host ports: host port range "${range.name}" (${range.first}-${range.first + range.size - 1}) has at most ${largest} consecutive ports berth can hand out (the others are this pod's or held by pods berth did not admit); ask for a smaller block`,
    );
    this.name = 'HostPortBlockError';
    this.range = range.name;
    this.size = size;
    this.largest = largest;
  }
}

/** The namespace would hold more host ports than `hostPortQuotas` allows it. Denied 403. */
export class HostPortQuotaError extends Error {
  readonly namespace: string;
  readonly quota: number;
  readonly used: number;
  readonly asked: number;
  constructor(path: string, namespace: string, quota: number, used: number, asked: number) {
    super(
      `${path}: Forbidden: exceeded quota: namespace "${namespace}" may hold ${quota} host ports (hostPortQuotas), holds ${used}, and this pod asks for ${asked}`,
    );
    this.name = 'HostPortQuotaError';
    this.namespace = namespace;
    this.quota = quota;
    this.used = used;
    this.asked = asked;
  }
}

/**
 * A record's first write found its namespace's count without room for its `quotaUnits` (a
 * concurrent pod took the last of them): nothing was written.
 */
export class NamespaceQuotaFullError extends Error {
  readonly namespace: string;
  /** The count as the refused write found it. */
  readonly used: number;
  constructor(namespace: string, used: number, options?: { cause?: unknown }) {
    super(`namespace "${namespace}" holds ${used} host ports of its quota`, options);
    this.name = 'NamespaceQuotaFullError';
    this.namespace = namespace;
    this.used = used;
  }
}

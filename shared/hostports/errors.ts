/** Host port allocation failures, each typed so the admission handler maps it to an answer. */

/** A count berth read changed before the write, or another transaction held an item: choose again. */
export class HostPortConflictError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HostPortConflictError';
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

/** Every attempt at releasing a pod's host ports lost a race; the record and its uses are unchanged. */
export class HostPortReleaseContentionError extends Error {
  /** The pod's allocation id (`berth.dev/allocation-id`). */
  readonly id: string;
  readonly attempts: number;
  constructor(id: string, attempts: number, options?: { cause?: unknown }) {
    super(
      `could not release the host ports of allocation ${id} after ${attempts} concurrent conflicts; the repair pass releases them if the pod is gone`,
      options,
    );
    this.name = 'HostPortReleaseContentionError';
    this.id = id;
    this.attempts = attempts;
  }
}

/**
 * Kubernetes API failures in berth's own terms. The client-node adapter translates every
 * `ApiException` into one of these, so callers branch on classes, never on status numbers or
 * on client-node types.
 */

/** The `metav1.Status` fields berth reads from an error body. */
export interface KubernetesStatus {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  readonly details?: {
    readonly name?: string;
    readonly kind?: string;
    readonly causes?: readonly { readonly reason?: string; readonly message?: string }[];
  };
}

/**
 * The `metav1.Status` of an error answer, from its raw body text (or an already parsed body).
 * A 401 carries no Status body from every server, so one is made up for it.
 */
export function statusOf(body: unknown, statusCode: number): KubernetesStatus | undefined {
  return (
    parseStatusBody(body) ??
    (statusCode === 401 ? { code: statusCode, reason: 'Unauthorized' } : undefined)
  );
}

function parseStatusBody(body: unknown): KubernetesStatus | undefined {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as { kind?: unknown }).kind === 'Status' ? (value as KubernetesStatus) : undefined;
}

/** The token was refused (401): a new token may be accepted where this one was not. */
export function isUnauthorized(error: unknown): boolean {
  return error instanceof KubernetesApiError && error.statusCode === 401;
}

/** What the adapter was doing when the call failed, for messages and logs. */
export interface KubernetesRequestTarget {
  /** e.g. `patch`, `list`. */
  readonly verb: string;
  /** e.g. `nodes/ip-10-0-1-2`, `pods`. */
  readonly resource: string;
}

/** Base of every Kubernetes API failure; `statusCode` is undefined when no response arrived. */
export class KubernetesApiError extends Error {
  readonly statusCode: number | undefined;
  /** The Status `reason` (`NotFound`, `Conflict`, `Invalid`, `Expired`, ...), or `Unknown`. */
  readonly reason: string;
  readonly target: KubernetesRequestTarget;
  readonly status: KubernetesStatus | undefined;

  constructor(
    target: KubernetesRequestTarget,
    statusCode: number | undefined,
    status: KubernetesStatus | undefined,
    options?: { cause?: unknown; message?: string },
  ) {
    const reason = status?.reason ?? 'Unknown';
    super(
      options?.message ??
        `kubernetes ${target.verb} ${target.resource} failed: ${statusCode ?? 'no response'} ${reason}${
          status?.message ? `: ${status.message}` : ''
        }`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'KubernetesApiError';
    this.statusCode = statusCode;
    this.reason = reason;
    this.target = target;
    this.status = status;
  }

  /**
   * Worth retrying with backoff: throttling (429), server-side timeouts and errors (5xx), or no
   * response at all. A 4xx other than 429 will fail the same way again.
   */
  get retryable(): boolean {
    const code = this.statusCode;
    return code === undefined || code === 429 || code >= 500;
  }
}

/** The object does not exist (404). Reads return undefined instead; writes throw this. */
export class KubernetesNotFoundError extends KubernetesApiError {
  constructor(
    target: KubernetesRequestTarget,
    status: KubernetesStatus | undefined,
    options?: { cause?: unknown },
  ) {
    super(target, 404, status, options);
    this.name = 'KubernetesNotFoundError';
  }
}

/**
 * The object changed under a compare-and-swap write. Two server answers mean this:
 * - 409 `Conflict`: a `metadata.resourceVersion` precondition did not match;
 * - 422 `Invalid` with no field causes, answering a JSON patch: the apiserver could not apply
 *   the patch to the current object, which is how it reports a failed `test` operation (and a
 *   `remove`/`replace` of a path that is no longer there). It answers with
 *   `NewGenericServerResponse(422, ...)`, whose body carries only the generic message "the server
 *   rejected our request due to an error in our request", so the two cases cannot be told apart
 *   from the response; both mean "re-read and decide again".
 * A 422 that lists field causes is a validation failure of the patched object instead
 * (`KubernetesInvalidError`).
 */
export class KubernetesConflictError extends KubernetesApiError {
  constructor(
    target: KubernetesRequestTarget,
    statusCode: number,
    status: KubernetesStatus | undefined,
    options?: { cause?: unknown },
  ) {
    super(target, statusCode, status, options);
    this.name = 'KubernetesConflictError';
  }
}

/** The apiserver rejected the object itself (422 with field causes): a bug in what berth sent. */
export class KubernetesInvalidError extends KubernetesApiError {
  constructor(
    target: KubernetesRequestTarget,
    status: KubernetesStatus | undefined,
    options?: { cause?: unknown },
  ) {
    super(target, 422, status, options);
    this.name = 'KubernetesInvalidError';
  }
}

/**
 * A paged list's continue token expired (410 `Expired`) before the last page was read. The list
 * is not restarted silently: a restart could yield objects twice, and the passes that list treat
 * an incomplete list as a failed pass.
 */
export class KubernetesListExpiredError extends KubernetesApiError {
  constructor(
    target: KubernetesRequestTarget,
    status: KubernetesStatus | undefined,
    options?: { cause?: unknown },
  ) {
    super(target, 410, status, options);
    this.name = 'KubernetesListExpiredError';
  }
}

/** No HTTP response arrived (connection refused, reset, DNS, TLS): the API is unreachable. */
export class KubernetesUnreachableError extends KubernetesApiError {
  constructor(target: KubernetesRequestTarget, options: { cause: unknown }) {
    const detail = options.cause instanceof Error ? options.cause.message : String(options.cause);
    super(target, undefined, undefined, {
      ...options,
      message: `kubernetes ${target.verb} ${target.resource} failed: no response: ${detail}`,
    });
    this.name = 'KubernetesUnreachableError';
  }
}

/** No usable kubeconfig was found, or the one found could not be loaded. */
export class KubeConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubeConfigError';
  }
}

/** EKS did not describe the cluster well enough to reach its API (no endpoint or CA). */
export class EksClusterLookupError extends Error {
  readonly cluster: string;

  constructor(cluster: string, message: string, options?: { cause?: unknown }) {
    super(`EKS cluster ${cluster}: ${message}`, options);
    this.name = 'EksClusterLookupError';
    this.cluster = cluster;
  }
}

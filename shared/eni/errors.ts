/**
 * Errors of the ENI pools. Those the HTTP layer maps carry `statusCode` (400 bad request, 404
 * unknown node, 409 pool exhausted or an EKS Auto Mode node, 429 the holder's own requests
 * raced, 503 EC2 budget spent for now), and those worth a retry when to retry (`Retry-After`).
 */
import { AUTO_MODE_NETWORKING } from '../node-pool/auto-mode.js';
import { VPC_CNI_NODE } from '../node-pool/vpc-cni.js';
import type { NodeItemKey } from './model.js';

/** Base of the errors an HTTP caller sees. */
export abstract class EniRequestError extends Error {
  abstract readonly statusCode: 400 | 404 | 409 | 429 | 503;
  /** When a retry is worth it (the answer's `Retry-After`); absent when it is not. */
  readonly retryAfterMs?: number;
}

/** The request body or path is malformed; the message names the field. */
export class EniBadRequestError extends EniRequestError {
  readonly statusCode = 400;
  constructor(message: string) {
    super(message);
    this.name = 'EniBadRequestError';
  }
}

/** berth has no pool for the node, and the node is not (or no longer) in the cluster. */
export class UnknownNodeError extends EniRequestError {
  readonly statusCode = 404;
  readonly node: string;
  constructor(node: string, detail = 'no ENI pool for this node') {
    super(`node ${node}: ${detail}`);
    this.name = 'UnknownNodeError';
    this.node = node;
  }
}

/**
 * The node is an EKS Auto Mode node: its pod networking belongs to Auto Mode's own CNI, so berth
 * holds no pool there and hands out no address. A conflict (409) with the node's state, as an
 * address held by another is: a second owner of the node's addresses is what berth must never be.
 */
export class AutoModeNodeError extends EniRequestError {
  readonly statusCode = 409;
  readonly node: string;
  constructor(node: string, reason: string) {
    super(`node ${node}: an EKS Auto Mode node (${reason}): ${AUTO_MODE_NETWORKING}`);
    this.name = 'AutoModeNodeError';
    this.node = node;
  }
}

/**
 * The VPC CNI's aws-node runs on the node: its ipamd takes the primary ENI's addresses for its
 * own, so berth holds no pool there (409, as for an Auto Mode node: berth must never be a second
 * owner of the node's addresses).
 */
export class VpcCniNodeError extends EniRequestError {
  readonly statusCode = 409;
  readonly node: string;
  constructor(node: string) {
    super(
      `node ${node}: ${VPC_CNI_NODE} (keep aws-node off the nodes berth-cni serves: berth manifests --cni prints the patch)`,
    );
    this.name = 'VpcCniNodeError';
    this.node = node;
  }
}

/**
 * The node's berth-cni hands its addresses out itself (its agent took the set): berth assigns
 * none there per pod, since two allocators over one set could give one address twice. A plugin
 * of the earlier way still installed retries until the new one serves the node.
 */
export class NodeHandsOutError extends EniRequestError {
  readonly statusCode = 409;
  override readonly retryAfterMs = 1000;
  readonly node: string;
  constructor(node: string) {
    super(
      `node ${node}: its berth-cni hands out the node's addresses itself; berth assigns none per pod there (update berth-cni on the node)`,
    );
    this.name = 'NodeHandsOutError';
    this.node = node;
  }
}

/** The node's pool has no IP to give: at instance capacity, or its subnet is out of addresses. */
export class PoolExhaustedError extends EniRequestError {
  readonly statusCode = 409;
  readonly node: string;
  constructor(node: string, reason: string, options?: { cause?: unknown }) {
    super(`node ${node}: pool exhausted: ${reason}`, options);
    this.name = 'PoolExhaustedError';
    this.node = node;
  }
}

/**
 * A release named a holder that does not hold the address: it was released before and has since
 * gone to another pod or container (a late or repeated CNI DEL). Nothing was changed.
 */
export class IpHeldByAnotherError extends EniRequestError {
  readonly statusCode = 409;
  constructor(ip: string, asked: string, holder: string) {
    super(`${ip} is held by ${holder}, not ${asked}: nothing released`);
    this.name = 'IpHeldByAnotherError';
  }
}

/** The holder a read-only lookup named holds no address on the node (the CNI's CHECK, or a DEL). */
export class NotAssignedError extends EniRequestError {
  readonly statusCode = 404;
  constructor(node: string, holder: string) {
    super(`node ${node}: ${holder} holds no address here`);
    this.name = 'NotAssignedError';
  }
}

/** The pool could not grow now (EC2 budget spent, or another writer holds the pool); retry later. */
export class PoolBusyError extends EniRequestError {
  readonly statusCode = 503;
  override readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PoolBusyError';
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * The holder's address changed under this request: another request of the same pod (a second
 * sandbox's ADD, or a DEL of an earlier one) wrote it first. Nothing is wrong with the node or
 * berth, the request only came at the same time as its sibling: 429, as for a request that must
 * wait its turn, with `Retry-After`; the CNI plugin answers it try-again-later (error 11), which
 * kubelet retries. Not 409, which a release's caller reads as "held by another: nothing to undo".
 */
export class HolderContendedError extends EniRequestError {
  readonly statusCode = 429;
  override readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.name = 'HolderContendedError';
    this.retryAfterMs = retryAfterMs;
  }
}

/** A conditional write lost: the item changed (or appeared, or vanished) since it was read. */
export class EniConflictError extends Error {
  readonly node: string;
  /** The write that failed, by its position in the commit. */
  readonly index: number;
  readonly key: NodeItemKey | undefined;
  constructor(
    node: string,
    index: number,
    key: NodeItemKey | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `node ${node}: ${key ? `${key.kind} ${key.id}` : `write ${index}`} changed concurrently`,
      options,
    );
    this.name = 'EniConflictError';
    this.node = node;
    this.index = index;
    this.key = key;
  }
}

/** Errors of berth's public fronts. */
import type { ListenerSlot } from './work.js';

/** A listener slot another game server holds. */
export class ListenerSlotTakenError extends Error {
  constructor(readonly slot: ListenerSlot) {
    super(`listener port ${slot.port} of ${slot.loadBalancerArn} is held by another game server`);
    this.name = 'ListenerSlotTakenError';
  }
}

/** A claim would pass a load balancer's listener limit. */
export class LoadBalancerFullError extends Error {
  constructor(
    readonly loadBalancerArn: string,
    readonly limit: number,
  ) {
    super(
      `${loadBalancerArn} already has ${limit} listeners, the most a Network Load Balancer takes`,
    );
    this.name = 'LoadBalancerFullError';
  }
}

/** Every load balancer of the pool is full, or has no free port in the listener range. */
export class FrontPoolFullError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'FrontPoolFullError';
  }
}

/** Another process kept reconciling an endpoint subnet for longer than a reconcile waits. */
export class SubnetReconcileBusyError extends Error {
  constructor(
    readonly subnetId: string,
    readonly holder: string,
  ) {
    super(`endpoint subnet ${subnetId} is being reconciled by ${holder}; try again shortly`);
    this.name = 'SubnetReconcileBusyError';
  }
}

/** The AWS services public fronts call. */
export type FrontService = 'ELBv2' | 'Global Accelerator';

/** One call of a front service: which service, which action (`DescribeLoadBalancers`). */
export interface FrontServiceCall {
  readonly service: FrontService;
  readonly action: string;
}

/**
 * The call each error came out of, noted by the budgeted APIs (the one way berth reaches these
 * services), so an answer can name ELBv2 rather than take its SDK error for the table's. Noted
 * beside the error, not wrapped around it: the worker and the pass classify the service's own
 * error by its code.
 */
const failedCalls = new WeakMap<object, FrontServiceCall>();

/** Notes that `error` is what `call` failed with; answers the error. */
export function noteFailedCall<E>(error: E, call: FrontServiceCall): E {
  if (typeof error === 'object' && error !== null) failedCalls.set(error, call);
  return error;
}

/** The front service call `error` came out of, when it came out of one. */
export function failedCallOf(error: unknown): FrontServiceCall | undefined {
  return typeof error === 'object' && error !== null ? failedCalls.get(error) : undefined;
}

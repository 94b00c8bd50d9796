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

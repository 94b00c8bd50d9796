/**
 * The fronts' ELBv2 and Global Accelerator calls paid from the account's rate budget, as EC2's
 * are: each attempt takes a token of its action's family first, throttling and transient faults
 * are retried with the same capped full-jitter backoff, and a budget that stays spent past the
 * allowed wait raises `RateBudgetExhaustedError` (`callWithinBudget`, shared with
 * `BudgetedEc2Network`).
 */
import { RateBudgetExhaustedError } from '../ec2/errors.js';
import {
  type AcceleratorActionFamily,
  type BudgetedCall,
  type BudgetedOptions,
  type BudgetFamily,
  callWithinBudget,
  type Elbv2ActionFamily,
  earlierDeadline,
} from '../ec2/rate-budget.js';
import {
  ACCELERATOR_ACTIONS,
  type AcceleratorAction,
  type CustomRoutingApi,
  type DestinationBatch,
} from './accelerator.js';
import {
  type CreateListenerInput,
  type CreateTargetGroupInput,
  ELBV2_ACTIONS,
  type Elbv2Action,
  type Elbv2Api,
  type IpTarget,
} from './elbv2.js';
import { type FrontService, noteFailedCall } from './errors.js';

/**
 * Which bucket each ELBv2 action draws from: ELBv2 meters Describe*, target registration and
 * its other mutating actions in buckets of their own (Elastic Load Balancing User Guide,
 * "Request throttling for the Elastic Load Balancing API").
 */
export const ELBV2_ACTION_FAMILY: Readonly<Record<Elbv2Action, Elbv2ActionFamily>> = {
  DescribeLoadBalancers: 'elbv2-describe',
  DescribeListeners: 'elbv2-describe',
  DescribeTargetGroups: 'elbv2-describe',
  DescribeTags: 'elbv2-describe',
  DescribeTargetHealth: 'elbv2-describe',
  RegisterTargets: 'elbv2-targets',
  DeregisterTargets: 'elbv2-targets',
  CreateTargetGroup: 'elbv2-mutate',
  DeleteTargetGroup: 'elbv2-mutate',
  CreateListener: 'elbv2-mutate',
  DeleteListener: 'elbv2-mutate',
};

/** Which bucket each Global Accelerator action draws from: reads apart from allow and deny. */
export const ACCELERATOR_ACTION_FAMILY: Readonly<
  Record<AcceleratorAction, AcceleratorActionFamily>
> = {
  DescribeCustomRoutingAccelerator: 'accelerator-describe',
  DescribeCustomRoutingEndpointGroup: 'accelerator-describe',
  ListCustomRoutingPortMappings: 'accelerator-describe',
  ListCustomRoutingPortMappingsByDestination: 'accelerator-describe',
  AllowCustomRoutingTraffic: 'accelerator-mutate',
  DenyCustomRoutingTraffic: 'accelerator-mutate',
};

/**
 * A budgeted call whose failures are noted as the service's: the service's own errors and a
 * budget spent for it; a failure of the budget's table is the table's.
 */
function serviceCall<A extends string, T>(
  service: FrontService,
  action: A,
  family: BudgetFamily,
  run: () => Promise<T>,
  alsoFrom?: BudgetFamily,
): BudgetedCall<A, T> {
  const call = { service, action };
  return {
    action,
    family,
    ...(alsoFrom === undefined ? {} : { alsoFrom }),
    run: () =>
      run().catch((error: unknown) => {
        throw noteFailedCall(error, call);
      }),
    exhausted: (spent, retryAfterMs, sent) =>
      noteFailedCall(new RateBudgetExhaustedError(spent, retryAfterMs, sent, { service }), call),
  };
}

/** An `Elbv2Api` whose every call is paid from the shared budget and retried within bounds. */
export class BudgetedElbv2Api implements Elbv2Api {
  readonly #inner: Elbv2Api;
  readonly #options: BudgetedOptions<Elbv2Action>;

  constructor(inner: Elbv2Api, options: BudgetedOptions<Elbv2Action>) {
    this.#inner = inner;
    this.#options = options;
  }

  /** The same API and budget for one invocation whose waits must all end by `deadline`. */
  until(deadline: number): BudgetedElbv2Api {
    return new BudgetedElbv2Api(this.#inner, {
      ...this.#options,
      deadline: earlierDeadline(deadline, this.#options.deadline),
    });
  }

  #call<T>(method: keyof Elbv2Api, run: () => Promise<T>): Promise<T> {
    const action = ELBV2_ACTIONS[method];
    return callWithinBudget(
      this.#options,
      // Every ELB call also pays the account-level bucket its families share.
      serviceCall('ELBv2', action, ELBV2_ACTION_FAMILY[action], run, 'elbv2-account'),
    );
  }

  describeLoadBalancers(arns: readonly string[]) {
    return this.#call('describeLoadBalancers', () => this.#inner.describeLoadBalancers(arns));
  }
  describeListeners(loadBalancerArn: string, marker?: string) {
    return this.#call('describeListeners', () =>
      this.#inner.describeListeners(loadBalancerArn, marker),
    );
  }
  describeTargetGroups(query: { readonly names?: readonly string[] }, marker?: string) {
    return this.#call('describeTargetGroups', () =>
      this.#inner.describeTargetGroups(query, marker),
    );
  }
  describeTags(arns: readonly string[]) {
    return this.#call('describeTags', () => this.#inner.describeTags(arns));
  }
  describeTargets(targetGroupArn: string) {
    return this.#call('describeTargets', () => this.#inner.describeTargets(targetGroupArn));
  }
  createTargetGroup(input: CreateTargetGroupInput) {
    return this.#call('createTargetGroup', () => this.#inner.createTargetGroup(input));
  }
  deleteTargetGroup(targetGroupArn: string) {
    return this.#call('deleteTargetGroup', () => this.#inner.deleteTargetGroup(targetGroupArn));
  }
  registerTargets(targetGroupArn: string, targets: readonly IpTarget[]) {
    return this.#call('registerTargets', () =>
      this.#inner.registerTargets(targetGroupArn, targets),
    );
  }
  deregisterTargets(targetGroupArn: string, targets: readonly IpTarget[]) {
    return this.#call('deregisterTargets', () =>
      this.#inner.deregisterTargets(targetGroupArn, targets),
    );
  }
  createListener(input: CreateListenerInput) {
    return this.#call('createListener', () => this.#inner.createListener(input));
  }
  deleteListener(listenerArn: string) {
    return this.#call('deleteListener', () => this.#inner.deleteListener(listenerArn));
  }
}

/** A `CustomRoutingApi` whose every call is paid from the shared budget and retried within bounds. */
export class BudgetedCustomRoutingApi implements CustomRoutingApi {
  readonly #inner: CustomRoutingApi;
  readonly #options: BudgetedOptions<AcceleratorAction>;

  constructor(inner: CustomRoutingApi, options: BudgetedOptions<AcceleratorAction>) {
    this.#inner = inner;
    this.#options = options;
  }

  /** The same API and budget for one invocation whose waits must all end by `deadline`. */
  until(deadline: number): BudgetedCustomRoutingApi {
    return new BudgetedCustomRoutingApi(this.#inner, {
      ...this.#options,
      deadline: earlierDeadline(deadline, this.#options.deadline),
    });
  }

  #call<T>(method: keyof CustomRoutingApi, run: () => Promise<T>): Promise<T> {
    const action = ACCELERATOR_ACTIONS[method];
    return callWithinBudget(
      this.#options,
      serviceCall('Global Accelerator', action, ACCELERATOR_ACTION_FAMILY[action], run),
    );
  }

  describeAccelerator(acceleratorArn: string) {
    return this.#call('describeAccelerator', () => this.#inner.describeAccelerator(acceleratorArn));
  }
  describeEndpointGroup(endpointGroupArn: string) {
    return this.#call('describeEndpointGroup', () =>
      this.#inner.describeEndpointGroup(endpointGroupArn),
    );
  }
  listPortMappings(acceleratorArn: string, endpointGroupArn: string, nextToken?: string) {
    return this.#call('listPortMappings', () =>
      this.#inner.listPortMappings(acceleratorArn, endpointGroupArn, nextToken),
    );
  }
  listPortMappingsByDestination(
    endpointId: string,
    destinationAddress: string,
    nextToken?: string,
  ) {
    return this.#call('listPortMappingsByDestination', () =>
      this.#inner.listPortMappingsByDestination(endpointId, destinationAddress, nextToken),
    );
  }
  allowTraffic(batch: DestinationBatch) {
    return this.#call('allowTraffic', () => this.#inner.allowTraffic(batch));
  }
  denyTraffic(batch: DestinationBatch) {
    return this.#call('denyTraffic', () => this.#inner.denyTraffic(batch));
  }
}

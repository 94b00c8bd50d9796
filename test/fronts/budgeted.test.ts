import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isThrottled } from '../../shared/aws/error-codes.js';
import { Ec2BudgetExhaustedError, RateBudgetExhaustedError } from '../../shared/ec2/errors.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import {
  type BudgetFamily,
  type BudgetSpecs,
  DEFAULT_ACCELERATOR_BUDGET,
  DEFAULT_BACKOFF,
  DEFAULT_ELBV2_BUDGET,
  type RateBudget,
} from '../../shared/ec2/rate-budget.js';
import {
  ACCELERATOR_ACTIONS,
  type AcceleratorAction,
  type CustomRoutingApi,
} from '../../shared/fronts/accelerator.js';
import {
  ACCELERATOR_ACTION_FAMILY,
  BudgetedCustomRoutingApi,
  BudgetedElbv2Api,
  ELBV2_ACTION_FAMILY,
} from '../../shared/fronts/budgeted.js';
import { ELBV2_ACTIONS, type Elbv2Action, type Elbv2Api } from '../../shared/fronts/elbv2.js';
import { DynamoRateBudget } from '../../shared/store/dynamo-rate-budget.js';
import {
  ACCELERATOR_ACTION_CLASS,
  ACCELERATOR_DEFAULT_BUCKETS,
} from '../../sim/fakes/accelerator.js';
import { ELBV2_ACTION_CLASS, ELBV2_DEFAULT_BUCKETS } from '../../sim/fakes/elbv2.js';
import { freshTable } from '../support/dynamo.js';

/** An SDK-shaped error: its `name` is the code the service answered. */
const sdkError = (name: string) => Object.assign(new Error(name), { name });

/**
 * A stand-in API whose every method answers `undefined`, after failing with the errors queued
 * for it, counting the attempts each method received.
 */
function scripted<Api extends object>(methods: readonly (keyof Api)[]) {
  const failures = new Map<keyof Api, Error[]>();
  const attempts = new Map<keyof Api, number>();
  const api = Object.fromEntries(
    methods.map((method) => [
      method,
      async () => {
        attempts.set(method, (attempts.get(method) ?? 0) + 1);
        const failure = failures.get(method)?.shift();
        if (failure) throw failure;
        return undefined;
      },
    ]),
  ) as unknown as Api;
  return {
    api,
    attempts,
    fail(method: keyof Api, ...errors: Error[]) {
      failures.set(method, [...(failures.get(method) ?? []), ...errors]);
    },
  };
}

/** A clock that sleeps by moving on, the budget on it, and every family a call took. */
function world(specs: BudgetSpecs = {}) {
  const clock = { now: 0 };
  const slept: number[] = [];
  const taken: BudgetFamily[] = [];
  const shared = new InProcessSharedBudget(() => clock.now, specs).for('test');
  const budget: RateBudget = {
    take: async (family, count) => {
      taken.push(family);
      return shared.take(family, count);
    },
  };
  const options = {
    budget,
    now: () => clock.now,
    sleep: async (ms: number) => {
      slept.push(ms);
      clock.now += ms;
    },
    random: () => 0.5,
  };
  return { clock, slept, taken, options };
}

const elbv2 = () => scripted<Elbv2Api>(Object.keys(ELBV2_ACTIONS) as (keyof Elbv2Api)[]);
const accelerator = () =>
  scripted<CustomRoutingApi>(Object.keys(ACCELERATOR_ACTIONS) as (keyof CustomRoutingApi)[]);

const LISTENER = {
  loadBalancerArn: 'nlb-a',
  port: 20_000,
  protocol: 'UDP',
  targetGroupArn: 'tg-1',
  tags: [],
} as const;
const BATCH = { endpointGroupArn: 'eg-1', endpointId: 'subnet-1', addresses: ['10.0.1.4'] };

describe('BudgetedElbv2Api', () => {
  it('retries ELBv2 throttling a bounded number of times with capped jittered waits', async () => {
    const { slept, options } = world();
    const inner = elbv2();
    inner.fail('createListener', ...Array.from({ length: 10 }, () => sdkError('Throttling')));
    const failure = await new BudgetedElbv2Api(inner.api, options)
      .createListener(LISTENER)
      .catch((e: unknown) => e);
    expect(isThrottled(failure)).toBe(true);
    expect(inner.attempts.get('createListener')).toBe(DEFAULT_BACKOFF.maxAttempts);
    // Full jitter (0.5 of the ceiling) under 200 ms doubling: the EC2 decorator's schedule.
    expect(slept).toEqual([100, 200, 400]);
  });

  it('pays every attempt, and answers once a retry gets through', async () => {
    const { taken, options } = world();
    const inner = elbv2();
    inner.fail('registerTargets', sdkError('ThrottlingException'), sdkError('Throttling'));
    await new BudgetedElbv2Api(inner.api, options).registerTargets('tg-1', [
      { ip: '10.0.1.4', port: 7777 },
    ]);
    expect(inner.attempts.get('registerTargets')).toBe(3);
    // Each attempt pays its family and the account-level bucket every ELB call shares.
    expect(taken).toEqual(
      Array.from({ length: 3 }, () => ['elbv2-targets', 'elbv2-account']).flat(),
    );
  });

  it('raises at once an error a retry cannot fix', async () => {
    const { slept, options } = world();
    const inner = elbv2();
    inner.fail('createListener', sdkError('DuplicateListenerException'));
    await expect(
      new BudgetedElbv2Api(inner.api, options).createListener(LISTENER),
    ).rejects.toMatchObject({ name: 'DuplicateListenerException' });
    expect(inner.attempts.get('createListener')).toBe(1);
    expect(slept).toEqual([]);
  });

  it('retries no later than its deadline', async () => {
    const { slept, options } = world();
    const inner = elbv2();
    inner.fail('deleteListener', ...Array.from({ length: 4 }, () => sdkError('Throttling')));
    // Backoffs of 100, 200, 400 ms: a deadline 250 ms out allows the first, not the second.
    const failure = await new BudgetedElbv2Api(inner.api, options)
      .until(250)
      .deleteListener('l-1')
      .catch((e: unknown) => e);
    expect(isThrottled(failure)).toBe(true);
    expect(slept).toEqual([100]);
    expect(inner.attempts.get('deleteListener')).toBe(2);
  });

  it("draws each call from its action's family", async () => {
    const { taken, options } = world();
    const api = new BudgetedElbv2Api(elbv2().api, options);
    await api.describeLoadBalancers(['nlb-a']);
    await api.describeListeners('nlb-a');
    await api.describeTargetGroups({});
    await api.describeTags(['tg-1']);
    await api.describeTargets('tg-1');
    await api.createTargetGroup({ name: 'b', protocol: 'UDP', port: 1, vpcId: 'v', tags: [] });
    await api.registerTargets('tg-1', []);
    await api.deregisterTargets('tg-1', []);
    await api.createListener(LISTENER);
    await api.deleteListener('l-1');
    await api.deleteTargetGroup('tg-1');
    expect(taken).toEqual(
      [
        ...Array.from({ length: 5 }, () => 'elbv2-describe'),
        'elbv2-mutate',
        'elbv2-targets',
        'elbv2-targets',
        'elbv2-mutate',
        'elbv2-mutate',
        'elbv2-mutate',
      ].flatMap((family) => [family, 'elbv2-account']),
    );
  });

  it('gives up when the account-level bucket the families share is spent', async () => {
    const { options } = world({ 'elbv2-account': { capacity: 2, refillPerSecond: 0.01 } });
    const api = new BudgetedElbv2Api(elbv2().api, options);
    await api.describeListeners('nlb-a');
    await api.registerTargets('tg-1', []);
    // Neither family is spent, the account's is.
    const failure = await api.deleteListener('l-1').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RateBudgetExhaustedError);
    expect(failure).toMatchObject({ family: 'elbv2-account' });
  });

  it('gives up with RateBudgetExhaustedError, naming the family, instead of waiting long', async () => {
    const { options } = world({ 'elbv2-mutate': { capacity: 1, refillPerSecond: 0.01 } });
    const inner = elbv2();
    const api = new BudgetedElbv2Api(inner.api, options);
    await api.deleteListener('l-1');
    const failure = await api.deleteListener('l-2').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RateBudgetExhaustedError);
    expect(failure).not.toBeInstanceOf(Ec2BudgetExhaustedError);
    expect(failure).toMatchObject({ family: 'elbv2-mutate', attemptsSent: 0 });
    expect(inner.attempts.get('deleteListener')).toBe(1);
  });
});

describe('a budgeted call, whatever the service answers', () => {
  it('stops at the attempt limit or the first answer no retry can fix, waiting at most the capped backoffs', async () => {
    const answers = fc.constantFrom(
      'Throttling',
      'ThrottlingException',
      'TransactionInProgressException',
      'InternalServiceErrorException',
      'DuplicateListenerException',
      'ok',
    );
    await fc.assert(
      fc.asyncProperty(fc.array(answers, { maxLength: 8 }), async (script) => {
        const { slept, options } = world({ 'elbv2-mutate': { capacity: 100, refillPerSecond: 0 } });
        const inner = elbv2();
        const failures = script.slice(0, script.indexOf('ok') + 1 || script.length);
        inner.fail('createListener', ...failures.filter((a) => a !== 'ok').map(sdkError));
        const outcome = await new BudgetedElbv2Api(inner.api, options)
          .createListener(LISTENER)
          .then(
            () => 'ok',
            (e: { name: string }) => e.name,
          );
        const attempts = inner.attempts.get('createListener') ?? 0;
        expect(attempts).toBeLessThanOrEqual(DEFAULT_BACKOFF.maxAttempts);
        // Each wait is a backoff: one fewer than the attempts, each under its capped ceiling.
        expect(slept).toHaveLength(attempts - 1);
        slept.forEach((ms, i) => {
          expect(ms).toBeLessThan(
            Math.min(DEFAULT_BACKOFF.maxDelayMs, DEFAULT_BACKOFF.baseDelayMs * 2 ** i),
          );
        });
        const fatal = failures.indexOf('DuplicateListenerException');
        if (fatal >= 0 && fatal < DEFAULT_BACKOFF.maxAttempts) {
          expect([outcome, attempts]).toEqual(['DuplicateListenerException', fatal + 1]);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('BudgetedCustomRoutingApi', () => {
  it("retries Global Accelerator's throttling and transient faults within bounds", async () => {
    // A bucket that holds every attempt, so the waits are the backoff's alone.
    const { slept, taken, options } = world({
      'accelerator-mutate': { capacity: 4, refillPerSecond: 0 },
    });
    const inner = accelerator();
    inner.fail(
      'allowTraffic',
      sdkError('ThrottlingException'),
      sdkError('TransactionInProgressException'),
      sdkError('InternalServiceErrorException'),
    );
    await new BudgetedCustomRoutingApi(inner.api, options).allowTraffic(BATCH);
    expect(inner.attempts.get('allowTraffic')).toBe(4);
    expect(slept).toEqual([100, 200, 400]);
    expect(taken).toEqual(Array.from({ length: 4 }, () => 'accelerator-mutate'));
  });

  it('raises an invalid batch at once', async () => {
    const { options } = world();
    const inner = accelerator();
    inner.fail('denyTraffic', sdkError('InvalidArgumentException'));
    await expect(
      new BudgetedCustomRoutingApi(inner.api, options).denyTraffic(BATCH),
    ).rejects.toMatchObject({ name: 'InvalidArgumentException' });
    expect(inner.attempts.get('denyTraffic')).toBe(1);
  });

  it('keeps its reads and its allow and deny in buckets apart', async () => {
    const { taken, options } = world({ 'accelerator-mutate': { capacity: 1, refillPerSecond: 0 } });
    const api = new BudgetedCustomRoutingApi(accelerator().api, options);
    await api.allowTraffic(BATCH);
    const refused = await api.denyTraffic(BATCH).catch((e: unknown) => e);
    expect(refused).toMatchObject({
      name: 'RateBudgetExhaustedError',
      family: 'accelerator-mutate',
    });
    // A spent allow-and-deny bucket leaves the reads their own.
    await api.describeAccelerator('acc');
    await api.describeEndpointGroup('eg-1');
    await api.listPortMappings('acc', 'eg-1');
    await api.listPortMappingsByDestination('subnet-1', '10.0.1.4');
    expect(taken.filter((family) => family === 'accelerator-describe')).toHaveLength(4);
  });
});

describe('the fronts families of the account budget', () => {
  it('map every action berth calls', () => {
    expect(Object.keys(ELBV2_ACTION_FAMILY).sort()).toEqual(Object.values(ELBV2_ACTIONS).sort());
    expect(Object.keys(ACCELERATOR_ACTION_FAMILY).sort()).toEqual(
      Object.values(ACCELERATOR_ACTIONS).sort(),
    );
  });

  it("stay at or below half of every bucket the fakes meter berth's actions by", () => {
    // The fakes carry the services' figures and where each comes from (the EC2 budget's test
    // holds its families to the EC2 fake's buckets the same way).
    for (const [action, family] of Object.entries(ELBV2_ACTION_FAMILY)) {
      const elb = ELBV2_DEFAULT_BUCKETS[ELBV2_ACTION_CLASS[action as Elbv2Action]];
      expect(DEFAULT_ELBV2_BUDGET[family].capacity).toBeLessThanOrEqual(elb.capacity / 2);
      expect(DEFAULT_ELBV2_BUDGET[family].refillPerSecond).toBeLessThanOrEqual(
        elb.refillPerSecond / 2,
      );
    }
    for (const [action, family] of Object.entries(ACCELERATOR_ACTION_FAMILY)) {
      const ga = ACCELERATOR_DEFAULT_BUCKETS[ACCELERATOR_ACTION_CLASS[action as AcceleratorAction]];
      expect(DEFAULT_ACCELERATOR_BUDGET[family].capacity).toBeLessThanOrEqual(ga.capacity / 2);
      expect(DEFAULT_ACCELERATOR_BUDGET[family].refillPerSecond).toBeLessThanOrEqual(
        ga.refillPerSecond / 2,
      );
    }
    // RegisterTargets and DeregisterTargets: 20 / 4 per s at ELBv2 (Elastic Load Balancing User
    // Guide, "Request throttling for the Elastic Load Balancing API").
    expect(DEFAULT_ELBV2_BUDGET['elbv2-targets']).toEqual({ capacity: 10, refillPerSecond: 2 });
  });

  it('are kept in the DynamoDB budget beside EC2 buckets, each family its own item', async () => {
    const { client, tableName } = await freshTable();
    const budget = new DynamoRateBudget({
      client,
      tableName,
      cluster: 'games',
      scope: 'eu-west-1',
      now: () => 1_000_000,
    });
    const grants: boolean[] = [];
    for (let i = 0; i <= DEFAULT_ELBV2_BUDGET['elbv2-mutate'].capacity; i++) {
      grants.push((await budget.take('elbv2-mutate')).granted);
    }
    expect(grants.filter(Boolean)).toHaveLength(DEFAULT_ELBV2_BUDGET['elbv2-mutate'].capacity);
    expect(grants.at(-1)).toBe(false);
    // The spent ELBv2 bucket is not EC2's, nor Global Accelerator's.
    expect((await budget.take('interfaces')).granted).toBe(true);
    expect((await budget.take('accelerator-mutate')).granted).toBe(true);
  });
});

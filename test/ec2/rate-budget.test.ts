import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isLimitExceeded,
  isNotFound,
  isPrefixShortage,
  isSubnetExhausted,
  isThrottled,
  isTransient,
} from '../../shared/aws/error-codes.js';
import { Ec2BudgetExhaustedError } from '../../shared/ec2/errors.js';
import {
  DRAW_HALF_LIFE_MS,
  decayDraws,
  InProcessSharedBudget,
  takeFairly,
  WAITING_MS,
} from '../../shared/ec2/fair-share.js';
import {
  type BackoffPolicy,
  BudgetedEc2Network,
  backoffDelay,
  DEFAULT_BACKOFF,
  DEFAULT_EC2_BUDGET,
  EC2_ACTION_FAMILY,
  NODE_WORK_BACKOFF,
  type RateBudget,
} from '../../shared/ec2/rate-budget.js';
import { fullBucket, refill, takeTokens } from '../../shared/ec2/token-bucket.js';
import { DynamoRateBudget } from '../../shared/store/dynamo-rate-budget.js';
import { EC2_DEFAULT_BUCKETS, FakeEc2 } from '../../sim/fakes/ec2.js';
import { freshTable } from '../support/dynamo.js';

/** For a minute, two takers each ask for one `interfaces` token every 100 ms: what each got. */
async function contend(clock: { now: number }, a: RateBudget, b: RateBudget) {
  const got = { a: 0, b: 0 };
  for (let tick = 0; tick < 600; tick++) {
    clock.now += 100;
    if ((await a.take('interfaces')).granted) got.a++;
    if ((await b.take('interfaces')).granted) got.b++;
  }
  return got;
}

/**
 * The EC2 fake behind a one-token `interfaces` bucket refilling `refillPerSecond`, on a clock
 * that sleeps by moving on.
 */
function overSlowBucket(refillPerSecond: number, backoff?: BackoffPolicy) {
  const clock = { now: 0 };
  return new BudgetedEc2Network(new FakeEc2({ now: () => clock.now }), {
    budget: new InProcessSharedBudget(() => clock.now, {
      ...DEFAULT_EC2_BUDGET,
      interfaces: { capacity: 1, refillPerSecond },
    }).for('test'),
    now: () => clock.now,
    sleep: async (ms) => {
      clock.now += ms;
    },
    random: () => 0,
    ...(backoff ? { backoff } : {}),
  });
}

describe('takeTokens', () => {
  it('never grants more than capacity plus what the elapsed time refilled', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 200 }),
        (capacity, refillPerSecond, gaps) => {
          const spec = { capacity, refillPerSecond };
          let state = fullBucket(spec, 0);
          let now = 0;
          let granted = 0;
          for (const gap of gaps) {
            now += gap;
            const outcome = takeTokens(spec, state, now);
            state = outcome.state;
            if (outcome.granted) granted++;
            else expect(outcome.retryAfterMs).toBeGreaterThan(0);
          }
          expect(granted).toBeLessThanOrEqual(capacity + (now / 1000) * refillPerSecond);
        },
      ),
    );
  });

  it('refills at the given rate up to capacity, and not at all when the clock goes back', () => {
    const spec = { capacity: 10, refillPerSecond: 2 };
    expect(refill(spec, { tokens: 0, updatedAt: 0 }, 1_500).tokens).toBe(3);
    expect(refill(spec, { tokens: 9, updatedAt: 0 }, 10_000).tokens).toBe(10);
    expect(refill(spec, { tokens: 4, updatedAt: 5_000 }, 1_000)).toEqual({
      tokens: 4,
      updatedAt: 5_000,
    });
  });
});

describe('DEFAULT_EC2_BUDGET', () => {
  it('stays at or below half of every EC2 bucket its actions draw from', () => {
    for (const [action, family] of Object.entries(EC2_ACTION_FAMILY)) {
      const ec2 = EC2_DEFAULT_BUCKETS[action as keyof typeof EC2_DEFAULT_BUCKETS];
      const budget = DEFAULT_EC2_BUDGET[family];
      expect(budget.refillPerSecond).toBeLessThanOrEqual(ec2.refillPerSecond / 2);
      expect(budget.capacity).toBeLessThanOrEqual(ec2.capacity / 2);
    }
  });
});

describe('backoffDelay', () => {
  it('is jittered under a ceiling that doubles and is capped', () => {
    expect(backoffDelay(DEFAULT_BACKOFF, 1, () => 0.999)).toBeLessThan(200);
    expect(backoffDelay(DEFAULT_BACKOFF, 3, () => 0.5)).toBe(400);
    expect(backoffDelay(DEFAULT_BACKOFF, 30, () => 0.999)).toBeLessThan(DEFAULT_BACKOFF.maxDelayMs);
    expect(backoffDelay(DEFAULT_BACKOFF, 2, () => 0)).toBe(0);
  });
});

function budgetedFake(options: { throttleRate?: number } = {}) {
  const clock = { now: 0 };
  const slept: number[] = [];
  const fake = new FakeEc2({ now: () => clock.now, random: () => 0.3 });
  fake.addSubnet('subnet-1', '10.0.0.0/24');
  fake.throttleRate = options.throttleRate ?? 0;
  const budget = new InProcessSharedBudget(() => clock.now).for('test');
  const network = new BudgetedEc2Network(fake, {
    budget,
    now: () => clock.now,
    sleep: async (ms) => {
      slept.push(ms);
      clock.now += ms;
    },
    random: () => 0.5,
  });
  return { clock, fake, network, slept };
}

describe('BudgetedEc2Network', () => {
  it('retries RequestLimitExceeded a bounded number of times with capped jittered waits', async () => {
    const { fake, network, slept } = budgetedFake({ throttleRate: 1 });
    const failure = await network.describeSubnets(['subnet-1']).catch((e: unknown) => e);
    expect(isThrottled(failure)).toBe(true);
    expect(fake.counts.get('DescribeSubnets')).toBe(DEFAULT_BACKOFF.maxAttempts);
    expect(slept).toEqual([100, 200, 400]);
  });

  it('retries no later than its deadline: the throttle is answered once a backoff would pass it', async () => {
    const { fake, network, slept } = budgetedFake({ throttleRate: 1 });
    // Backoffs of 100, 200, 400 ms: a deadline 250 ms out allows the first (to 100 ms), not the
    // second (to 300 ms).
    const failure = await network
      .until(250)
      .describeSubnets(['subnet-1'])
      .catch((e: unknown) => e);
    expect(isThrottled(failure)).toBe(true);
    expect(slept).toEqual([100]);
    expect(fake.counts.get('DescribeSubnets')).toBe(2);
  });

  it('does not retry an error that a retry cannot fix', async () => {
    const { fake, network } = budgetedFake();
    fake.failNext('DeleteNetworkInterface', 'InvalidNetworkInterfaceID.NotFound');
    await expect(network.deleteNetworkInterface({ eniId: 'eni-x' })).rejects.toMatchObject({
      name: 'InvalidNetworkInterfaceID.NotFound',
    });
    expect(fake.counts.get('DeleteNetworkInterface')).toBe(1);
  });

  it('paces calls to the budget and never exceeds it in any window', async () => {
    const { clock, fake, network } = budgetedFake();
    const times: number[] = [];
    for (let i = 0; i < 60; i++) {
      await network.createTags({ resourceIds: [], tags: [] }).catch(() => undefined);
      times.push(clock.now);
    }
    const spec = DEFAULT_EC2_BUDGET.tags;
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        const window = ((times[j] ?? 0) - (times[i] ?? 0)) / 1000;
        expect(j - i + 1).toBeLessThanOrEqual(spec.capacity + window * spec.refillPerSecond + 1);
      }
    }
    expect(fake.throttled).toBe(0);
  });

  it('gives up with Ec2BudgetExhaustedError instead of waiting past its limit', async () => {
    const network = overSlowBucket(0.01);
    await network.deleteNetworkInterface({ eniId: 'eni-x' }).catch(() => undefined);
    const failure = await network
      .deleteNetworkInterface({ eniId: 'eni-x' })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Ec2BudgetExhaustedError);
    expect((failure as Ec2BudgetExhaustedError).family).toBe('interfaces');
    // Refused before its first attempt: nothing of the call was sent.
    expect((failure as Ec2BudgetExhaustedError).attemptsSent).toBe(0);
  });
});

describe('NODE_WORK_BACKOFF', () => {
  it('waits its turn at a drained budget where the request path gives up', async () => {
    /** A call made while an empty bucket refills one token every 10 s, waiting as `backoff` allows. */
    const callWith = async (backoff: BackoffPolicy) => {
      const network = overSlowBucket(0.1, backoff);
      await network.deleteNetworkInterface({ eniId: 'eni-x' }).catch(() => undefined);
      return network.deleteNetworkInterface({ eniId: 'eni-x' }).then(
        () => 'served',
        (error: unknown) => (error instanceof Ec2BudgetExhaustedError ? 'refused' : 'served'),
      );
    };
    expect(await callWith(DEFAULT_BACKOFF)).toBe('refused');
    // EC2's own answer (no such ENI) means the budget let the call through.
    expect(await callWith(NODE_WORK_BACKOFF)).toBe('served');
  });

  it("never waits past its invocation's deadline, however patient", async () => {
    // The clock starts at 0 and the next token is 10 s away: a deadline at 5 s refuses the wait.
    const network = overSlowBucket(0.1, NODE_WORK_BACKOFF).until(5_000);
    await network.deleteNetworkInterface({ eniId: 'eni-x' }).catch(() => undefined);
    const failure = await network
      .deleteNetworkInterface({ eniId: 'eni-x' })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Ec2BudgetExhaustedError);
  });
});

describe('EC2 error classification', () => {
  it('sorts EC2 codes into not found, limit exceeded, subnet exhausted, throttled and transient', () => {
    const err = (name: string) => Object.assign(new Error(name), { name });
    expect(isNotFound(err('InvalidNetworkInterfaceID.NotFound'))).toBe(true);
    expect(isNotFound(err('InvalidAttachmentID.NotFound'))).toBe(true);
    expect(isLimitExceeded(err('PrivateIpAddressLimitExceeded'))).toBe(true);
    expect(isLimitExceeded(err('AttachmentLimitExceeded'))).toBe(true);
    expect(isSubnetExhausted(err('InsufficientFreeAddressesInSubnet'))).toBe(true);
    // A fragmented subnet may still have single addresses: a prefix shortage, not exhaustion.
    expect(isSubnetExhausted(err('InsufficientCidrBlocks'))).toBe(false);
    expect(isPrefixShortage(err('InsufficientCidrBlocks'))).toBe(true);
    expect(isPrefixShortage(err('InsufficientFreeAddressesInSubnet'))).toBe(false);
    expect(isThrottled(err('RequestLimitExceeded'))).toBe(true);
    expect(isTransient(err('InternalError'))).toBe(true);
    expect(isNotFound(err('InvalidParameterValue'))).toBe(false);
    expect(isLimitExceeded({ Code: 'NetworkInterfaceLimitExceeded' })).toBe(true);
  });
});

describe('DynamoRateBudget', () => {
  it('grants up to capacity, refuses with a retry time, and refills', async () => {
    const { client, tableName } = await freshTable();
    const clock = { now: 1_000_000 };
    const budget = new DynamoRateBudget({
      client,
      tableName,
      cluster: 'test',
      scope: 'test',
      now: () => clock.now,
      specs: { ...DEFAULT_EC2_BUDGET, addresses: { capacity: 3, refillPerSecond: 1 } },
    });
    for (let i = 0; i < 3; i++) expect((await budget.take('addresses')).granted).toBe(true);
    const refused = await budget.take('addresses');
    expect(refused).toEqual({ granted: false, retryAfterMs: 1000 });
    clock.now += 2_000;
    expect((await budget.take('addresses', 2)).granted).toBe(true);
    expect((await budget.take('addresses')).granted).toBe(false);
  });

  it('meters the Region its EC2 client resolves as the one a Lambda names, in one bucket', async () => {
    const { client, tableName } = await freshTable();
    const options = {
      client,
      tableName,
      now: () => 3_000_000,
      specs: { ...DEFAULT_EC2_BUDGET, addresses: { capacity: 2, refillPerSecond: 0.001 } },
    };
    // A Lambda's Region from its environment; a CLI's from its profile, learned at the first take.
    const lambda = new DynamoRateBudget({ ...options, cluster: 'a', scope: 'eu-west-1' });
    let asked = 0;
    const cli = new DynamoRateBudget({
      ...options,
      cluster: 'b',
      scope: async () => {
        asked++;
        return 'eu-west-1';
      },
    });
    expect((await lambda.take('addresses')).granted).toBe(true);
    expect((await cli.take('addresses')).granted).toBe(true);
    expect((await cli.take('addresses')).granted).toBe(false);
    expect((await lambda.take('addresses')).granted).toBe(false);
    expect(asked).toBe(1);
  });

  it('is shared: concurrent takers of two processes never exceed the bucket', async () => {
    const { client, tableName } = await freshTable();
    const now = () => 5_000_000;
    const specs = { ...DEFAULT_EC2_BUDGET, interfaces: { capacity: 10, refillPerSecond: 0 } };
    const processBudget = () =>
      new DynamoRateBudget({ client, tableName, cluster: 'test', scope: 'test', now, specs });
    const [a, b] = [processBudget(), processBudget()];
    const grants = await Promise.all(
      Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).take('interfaces')),
    );
    const granted = grants.filter((g) => g.granted).length;
    expect(granted).toBeLessThanOrEqual(10);
    // Contention may refuse a few more than strictly needed; a retry then gets the rest.
    let extra = 0;
    for (let i = 0; i < 20 && granted + extra < 10; i++)
      if ((await a.take('interfaces')).granted) extra++;
    expect(granted + extra).toBe(10);
    expect((await b.take('interfaces')).granted).toBe(false);
  });

  it('is one budget for every cluster of the account, each within its share under contention', async () => {
    const { client, tableName } = await freshTable();
    const clock = { now: 9_000_000 };
    const specs = { ...DEFAULT_EC2_BUDGET, interfaces: { capacity: 20, refillPerSecond: 2 } };
    const budgetOf = (cluster: string) =>
      new DynamoRateBudget({
        client,
        tableName,
        cluster,
        scope: 'us-east-1',
        now: () => clock.now,
        specs,
      });
    const busy = budgetOf('games-a');
    const quiet = budgetOf('games-b');
    // games-a alone drains the bucket: no contention while it is more than half full, then it is
    // the only active cluster and keeps all of it.
    let drained = 0;
    while ((await busy.take('interfaces')).granted) drained++;
    expect(drained).toBe(20);
    // For the next minute both ask every 100 ms: games-b gets its share despite games-a's rush.
    const got = await contend(clock, busy, quiet);
    expect(got.a + got.b).toBeLessThanOrEqual(121);
    expect(got.b).toBeGreaterThanOrEqual(50);
    // Another deployment's budget on another Region's key is not this one.
    const elsewhere = new DynamoRateBudget({
      client,
      tableName,
      cluster: 'games-a',
      scope: 'eu-west-1',
      now: () => clock.now,
      specs,
    });
    expect((await elsewhere.take('interfaces', 20)).granted).toBe(true);
  });
});

describe('takeFairly', () => {
  const spec = { capacity: 10, refillPerSecond: 1 };
  const bucket = (tokens: number, draws: Record<string, number>, waiting = {}) => ({
    tokens,
    updatedAt: 0,
    draws,
    waiting,
  });

  it("decays a yielding cluster's draws once over the time that passed, however often it yields", () => {
    const slow = { capacity: 10, refillPerSecond: 0.1 };
    let state = bucket(2, { a: 8, b: 0 }, { b: 0 });
    for (const at of [3_000, 6_000, 9_000]) {
      // b (less served) waits, so a yields; b asks again to stay waiting.
      const yielded = takeFairly(slow, { ...state, waiting: { b: at } }, at, 'a');
      expect(yielded.granted).toBe(false);
      state = yielded.state;
    }
    expect(state.updatedAt).toBe(9_000);
    expect(state.draws.a).toBeCloseTo(8 * 0.5 ** (9_000 / DRAW_HALF_LIFE_MS), 6);
  });

  it('lets a cluster alone in its need take all the bucket has, however much it drew', () => {
    let state = bucket(10, { b: 100 });
    for (let i = 0; i < 10; i++) {
      const take = takeFairly(spec, state, 0, 'b');
      expect(take.granted).toBe(true);
      state = take.state;
    }
    expect(takeFairly(spec, state, 0, 'b').granted).toBe(false);
  });

  it('records a cluster refused for lack of tokens as waiting, once per half wait', () => {
    const dry = { capacity: 10, refillPerSecond: 0 };
    const refused = takeFairly(dry, bucket(0, { a: 8 }), 0, 'b');
    expect(refused.granted).toBe(false);
    expect(refused.announced).toBe(true);
    expect(refused.state.waiting).toEqual({ b: 0 });
    expect(takeFairly(dry, refused.state, 1_000, 'b').announced).toBe(false);
    expect(takeFairly(dry, refused.state, WAITING_MS / 2, 'b').announced).toBe(true);
  });

  it('serves the least-served waiting cluster first once the bucket is contended', () => {
    const state = bucket(3, { a: 8, b: 1 }, { b: 0 });
    // a drew more than the waiting b: a waits a refill's worth.
    const over = takeFairly(spec, state, 0, 'a');
    expect(over.granted).toBe(false);
    expect(over.retryAfterMs).toBe(1000);
    // b takes, and is no longer waiting.
    const under = takeFairly(spec, state, 0, 'b');
    expect(under.granted).toBe(true);
    expect(under.state.draws.b).toBe(2);
    expect(under.state.waiting).toEqual({});
    // Above half full there is enough for both: a takes too.
    expect(takeFairly(spec, bucket(8, { a: 8, b: 1 }, { b: 0 }), 0, 'a').granted).toBe(true);
  });

  it('counts the draws of a cluster named constructor as a number, like any cluster', () => {
    // A cluster name is a DNS label, so `constructor` is one; its first draw starts from 0.
    const first = takeFairly(spec, bucket(10, {}), 0, 'constructor');
    expect(first.state.draws).toEqual({ constructor: 1 });
    expect(takeFairly(spec, first.state, 0, 'constructor').state.draws).toEqual({ constructor: 2 });
  });

  it('forgets draws and waits that are old', () => {
    expect(decayDraws({ a: 8, b: 1 }, 0, 300_000)).toEqual({ a: 0.25 });
    // b waited 20 s ago and is gone: a takes.
    expect(takeFairly(spec, bucket(1, { a: 8 }, { b: 0 }), 20_000, 'a').granted).toBe(true);
  });
});

describe('InProcessSharedBudget', () => {
  it('is one bucket for every cluster, shared fairly once contended', async () => {
    const clock = { now: 0 };
    const specs = { ...DEFAULT_EC2_BUDGET, interfaces: { capacity: 10, refillPerSecond: 1 } };
    const budget = new InProcessSharedBudget(() => clock.now, specs);
    const [a, b] = [budget.for('a'), budget.for('b')];
    let drained = 0;
    while ((await a.take('interfaces')).granted) drained++;
    expect(drained).toBe(10);
    expect((await b.take('interfaces')).granted).toBe(false);
    const got = await contend(clock, a, b);
    expect(got.a + got.b).toBeLessThanOrEqual(61);
    expect(got.b).toBeGreaterThanOrEqual(25);
  });
});

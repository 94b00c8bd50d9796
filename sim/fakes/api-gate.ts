/**
 * The front door the ELBv2 and Global Accelerator fakes share: a token bucket per action class
 * (each service meters its API by class of action, not per call site), a throttle rate, errors
 * injected for the next call of an action, and a log of every call. A fake calls `enter` before
 * it does anything, then `ok` or `fail`; so a refused call changes nothing, as AWS's do.
 */
import {
  type BucketSpec,
  type BucketState,
  fullBucket,
  takeTokens,
} from '../../shared/ec2/token-bucket.js';

/** An error shaped like the SDK's: `name` and `Code` are the service's error code. */
export class FakeAwsError extends Error {
  readonly Code: string;
  readonly $fault: 'client' | 'server';
  readonly $metadata: { readonly httpStatusCode: number };
  constructor(code: string, message: string, httpStatusCode = 400) {
    super(message);
    this.name = code;
    this.Code = code;
    this.$fault = httpStatusCode >= 500 ? 'server' : 'client';
    this.$metadata = { httpStatusCode };
  }
}

/** One call a fake answered (or refused). */
export interface FakeApiCall<A extends string> {
  readonly action: A;
  readonly at: number;
  readonly outcome: 'ok' | 'error';
  readonly code?: string;
}

/** How a service meters its actions. */
export interface ApiMeter<A extends string, C extends string> {
  /** The bucket each action draws from. */
  readonly classOf: Readonly<Record<A, C>>;
  readonly buckets: Readonly<Record<C, BucketSpec>>;
  /** A bucket every call also draws from, whatever its class (ELB's account-level bucket). */
  readonly accountBucket?: BucketSpec;
  /** The code (and message) a refused call gets: `Throttling`, `ThrottlingException`, ... */
  readonly throttleCode: string;
  readonly throttleMessage: string;
}

/** Throttling, injected failures and the call log of one fake service. */
export class ApiGate<A extends string, C extends string> {
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #meter: ApiMeter<A, C>;
  readonly #levels = new Map<C, BucketState>();
  #account: BucketState | undefined;
  readonly #injected: { action: A; code: string; message: string }[] = [];
  /** Probability that any call is throttled before it does anything. */
  throttleRate = 0;
  /** Every call, in order. */
  readonly calls: FakeApiCall<A>[] = [];
  /** Calls per action, ok or not. */
  readonly counts = new Map<A, number>();
  /** Calls refused as throttled (by a bucket or the throttle rate). */
  throttled = 0;
  /** Of `throttled`, those a bucket refused: calls over the documented rates, not faults. */
  overBucket = 0;

  constructor(meter: ApiMeter<A, C>, now: () => number, random: () => number) {
    this.#meter = meter;
    this.#now = now;
    this.#random = random;
  }

  /** Makes the next call of `action` fail with `code` (queued; each injection fails one call). */
  failNext(action: A, code: string, message = `injected ${code}`): void {
    this.#injected.push({ action, code, message });
  }

  /**
   * Takes the call's tokens (its class's, then the account's), then applies the throttle rate and
   * any injected failure. A call its class's bucket refuses takes nothing from the account's.
   */
  enter(action: A): void {
    this.counts.set(action, (this.counts.get(action) ?? 0) + 1);
    const family = this.#meter.classOf[action];
    const spec = this.#meter.buckets[family];
    const now = this.#now();
    const outcome = takeTokens(spec, this.#levels.get(family) ?? fullBucket(spec, now), now);
    this.#levels.set(family, outcome.state);
    let granted = outcome.granted;
    const account = this.#meter.accountBucket;
    if (granted && account) {
      const shared = takeTokens(account, this.#account ?? fullBucket(account, now), now);
      this.#account = shared.state;
      granted = shared.granted;
    }
    if (!granted) this.overBucket++;
    if (!granted || (this.throttleRate > 0 && this.#random() < this.throttleRate)) {
      this.throttled++;
      this.fail(action, this.#meter.throttleCode, this.#meter.throttleMessage);
    }
    const index = this.#injected.findIndex((e) => e.action === action);
    const injected = index >= 0 ? this.#injected.splice(index, 1)[0] : undefined;
    if (injected) {
      const status = /Internal|Unavailable/.test(injected.code) ? 500 : 400;
      this.fail(action, injected.code, injected.message, status);
    }
  }

  /** Logs a call answered. */
  ok<T>(action: A, value: T): T {
    this.calls.push({ action, at: this.#now(), outcome: 'ok' });
    return value;
  }

  /** Logs a call refused and throws its error. */
  fail(action: A, code: string, message: string, httpStatusCode = 400): never {
    this.calls.push({ action, at: this.#now(), outcome: 'error', code });
    throw new FakeAwsError(code, message, httpStatusCode);
  }

  /** Calls made of the given actions, ok or not. */
  countOf(actions: ReadonlySet<A>): number {
    let total = 0;
    for (const [action, count] of this.counts) if (actions.has(action)) total += count;
    return total;
  }
}

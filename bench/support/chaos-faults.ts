/**
 * Faults for the chaos run (bench/support/chaos.ts), injected where real ones arise:
 * - `throttle`: a request refused before it reaches the table (ProvisionedThroughputExceeded or
 *   ThrottlingException) that outlasted the SDK's own retries, so berth's code sees it;
 * - `ambiguous`: a write that lands, then the caller sees a timeout (the Lambda gave up);
 * - `retried`: a write that lands, then DynamoDB answers 500 InternalServerError (documented as
 *   "may or may not have succeeded"), which the SDK's standard retry sends again: the retry meets
 *   the first attempt's own write, as a failed condition or a transaction's idempotency token;
 * - `crash`: a write that lands, then the caller's process dies. Every caller runs as an
 *   invocation (`invoke`); once one crashes, nothing it still does reaches the table, EC2 or the
 *   settle queue, and its answer never reaches its client, who retries as real clients do.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** The kinds of injected fault. */
export type FaultKind = 'throttle' | 'ambiguous' | 'retried' | 'crash';

/** Probabilities: `throttle` per request, the rest per write. */
export type FaultRates = Readonly<Record<FaultKind, number>>;

/** An error the chaos run injected, named as the real one is. */
export class InjectedFault extends Error {
  readonly kind: FaultKind;
  readonly $metadata: { httpStatusCode?: number };
  constructor(kind: FaultKind, name: string, httpStatusCode?: number) {
    super(`injected ${kind}`);
    this.kind = kind;
    this.name = name;
    this.$metadata = httpStatusCode === undefined ? {} : { httpStatusCode };
  }
}

const WRITES: ReadonlySet<string> = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

const RETRIED_MIDDLEWARE = 'chaosRetriedWrite';

/** One caller's run: a Lambda invocation, a pass, a CNI call. */
interface Invocation {
  dead: boolean;
}

/** The fault behind an error, through any wrapping. */
export function injected(error: unknown): InjectedFault | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof InjectedFault) return e;
  return undefined;
}

/** Injects faults into the calls of invocations while `shaking`, and counts them. */
export class FaultInjector {
  readonly faults: Record<string, number> = {};
  /** Off while the run sets up, checks and quiets down. */
  shaking = true;
  readonly #random: () => number;
  readonly #rates: FaultRates;
  readonly #invocations = new AsyncLocalStorage<Invocation>();

  constructor(random: () => number, rates: FaultRates) {
    this.#random = random;
    this.#rates = rates;
  }

  /**
   * Runs `call` as one invocation. When it crashed, it rejects with the crash whatever the code
   * did after it (its answer, or its rollback's error, never reached anyone).
   */
  async invoke<T>(call: () => Promise<T>): Promise<T> {
    const invocation: Invocation = { dead: false };
    let value: T;
    try {
      value = await this.#invocations.run(invocation, call);
    } catch (error) {
      if (invocation.dead) throw new InjectedFault('crash', 'CallerCrashed');
      throw error;
    }
    if (invocation.dead) throw new InjectedFault('crash', 'CallerCrashed');
    return value;
  }

  /** Whether the current invocation (if any) is still alive. */
  alive(): boolean {
    return !this.#invocations.getStore()?.dead;
  }

  /**
   * `client` with faults on its requests: the outer faults (throttle, ambiguous, crash) around
   * `send`, and the `retried` fault inside the SDK's retry loop, which the client's middleware
   * stack carries (so `uninstall` once done: the stack is shared with `client`). Only calls made
   * inside an invocation are shaken; checks run outside one.
   */
  shake(client: DynamoDBClient): { readonly client: DynamoDBClient; uninstall(): void } {
    const shaken = Object.create(client) as DynamoDBClient;
    const send = async (command: { constructor: { name: string } }) => {
      const invocation = this.#invocations.getStore();
      if (invocation?.dead) throw new InjectedFault('crash', 'CallerCrashed');
      const active = invocation !== undefined && this.shaking;
      if (active && this.#roll('throttle')) {
        throw new InjectedFault(
          'throttle',
          this.#random() < 0.5 ? 'ThrottlingException' : 'ProvisionedThroughputExceededException',
          400,
        );
      }
      const out = await (client.send as (c: unknown) => Promise<unknown>)(command);
      if (active && WRITES.has(command.constructor.name)) {
        if (this.#roll('crash')) {
          invocation.dead = true;
          throw new InjectedFault('crash', 'CallerCrashed');
        }
        if (this.#roll('ambiguous')) throw new InjectedFault('ambiguous', 'TimeoutError');
      }
      return out;
    };
    shaken.send = send as unknown as DynamoDBClient['send'];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const invocation = this.#invocations.getStore();
        if (
          invocation !== undefined &&
          !invocation.dead &&
          this.shaking &&
          WRITES.has(context.commandName ?? '') &&
          this.#roll('retried')
        ) {
          throw new InjectedFault('retried', 'InternalServerError', 500);
        }
        return out;
      },
      { step: 'deserialize', name: RETRIED_MIDDLEWARE, priority: 'low' },
    );
    return {
      client: shaken,
      uninstall: () => void client.middlewareStack.remove(RETRIED_MIDDLEWARE),
    };
  }

  /** `target` whose methods fail once the calling invocation has crashed (EC2, a queue). */
  gate<T extends object>(target: T): T {
    return new Proxy(target, {
      get: (object, property, receiver) => {
        const value = Reflect.get(object, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (!this.alive()) throw new InjectedFault('crash', 'CallerCrashed');
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        };
      },
    });
  }

  #roll(kind: FaultKind): boolean {
    if (this.#random() >= this.#rates[kind]) return false;
    this.faults[kind] = (this.faults[kind] ?? 0) + 1;
    return true;
  }
}

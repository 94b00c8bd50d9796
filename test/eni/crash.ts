/**
 * Simulated crashes: an `Ec2Network` whose named call succeeds at EC2 and then "kills the
 * process" (throws before the caller can write the result to the store), once.
 */
import type { Ec2Network } from '../../shared/ec2/network.js';

/** Thrown where the process would have died. */
export class SimulatedCrashError extends Error {
  constructor(method: string) {
    super(`process died right after ${method}`);
    this.name = 'SimulatedCrashError';
  }
}

/** Wraps `inner` so that the first call of `method` takes effect and then throws. */
export function crashAfter(inner: Ec2Network, method: keyof Ec2Network): Ec2Network {
  let armed = true;
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const result = await value.apply(target, args);
        if (armed && property === method) {
          armed = false;
          throw new SimulatedCrashError(method);
        }
        return result;
      };
    },
  });
}

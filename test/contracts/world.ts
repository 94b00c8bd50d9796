/** What the contracts over a started service (moto, a fake of it) share. */
import { afterAll, beforeAll } from 'vitest';

/** moto imports every service's models at start: seconds on a busy machine. */
const START_TIMEOUT_MS = 90_000;

/** Builds one world for a describe block's cases, hands it to `use`, and stops it after them. */
export function sharedWorld<W extends { stop(): Promise<void> }>(
  make: () => Promise<W>,
  use: (world: W) => void,
): void {
  let started: W | undefined;
  beforeAll(async () => {
    started = await make();
    use(started);
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await started?.stop();
  });
}

/** What a call was refused with, or a failure if it was not. */
export async function refusal(call: Promise<unknown>): Promise<unknown> {
  const outcome = await call.then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  if (!outcome) throw new Error('the call was not refused');
  return outcome.error;
}

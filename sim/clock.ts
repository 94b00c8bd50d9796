/**
 * The simulated day's clock. berth's passes, the EC2 fake's rate buckets and the node pool's
 * provisioning run on day time, so a day at `--speed 600` sees EC2 refill, pool cooldowns and
 * pass intervals as a real day does, however fast the wall clock turns.
 */
export class SimClock {
  /** Epoch ms of the day's midnight: day time 0. */
  readonly startEpochMs: number;
  #dayMs = 0;

  constructor(startEpochMs: number) {
    this.startEpochMs = startEpochMs;
  }

  /** Epoch ms now, in day time. */
  readonly now = (): number => this.startEpochMs + this.#dayMs;

  /** Day time reached, in ms since the day began. */
  get dayMs(): number {
    return this.#dayMs;
  }

  /** Moves the day on to `dayMs`; time never runs backwards. */
  advanceTo(dayMs: number): void {
    this.#dayMs = Math.max(this.#dayMs, dayMs);
  }
}

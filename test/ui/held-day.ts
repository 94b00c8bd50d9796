/** A simulated day held still at one event while a browser test looks at its page. */

/** The hold: `atEvent` goes in `runSim`'s `afterEvent`; `reached` settles once the day stands. */
export interface HeldDay {
  /** Waits, at event `index` only, until `release`. */
  atEvent(index: number): Promise<void>;
  /** Settles when the day reached the event and stands still there. */
  readonly reached: Promise<void>;
  /** Lets the day go on (again harmless). */
  release(): void;
}

/** Holds the day after its event `index` (1-based, as `afterEvent` counts). */
export function holdAt(index: number): HeldDay {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reach: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  return {
    atEvent: async (at) => {
      if (at !== index) return;
      reach();
      await released;
    },
    reached,
    release: () => release(),
  };
}

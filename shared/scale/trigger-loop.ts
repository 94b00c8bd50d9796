/**
 * The scale-up trigger in a process that sees admissions and runs passes (the local server): it
 * keeps the trigger's state (trigger.ts) between passes, hears every pass's tally and every
 * admitted game-server pod, and runs a triggered pass when they exhaust the slack, one at a time
 * (the scale lease keeps it from overlapping a scheduled pass).
 */
import type { SlotTally } from './plan.js';
import { afterPass, NO_PASS_YET, onAdmitted, type TriggerState } from './trigger.js';

/**
 * What the trigger hears of one admission decision: only what tells a game server admitted. The
 * webhook's decisions (shared/admission/decision.ts) carry more, and are heard as they are.
 */
export interface HeardDecision {
  /** `pods`, `services`, `pods/binding`, … */
  readonly resource: string;
  readonly operation: string;
  readonly allowed: boolean;
  readonly dryRun: boolean;
}

/** How a pass is run for the trigger: scheduled or triggered, reporting its tally. */
export type TriggerablePass = (options: {
  readonly triggered: boolean;
  readonly onPlanned: (tally: SlotTally, nowMs: number) => void;
}) => Promise<unknown>;

/** The trigger's dependencies: the pass, the clock, where a failed triggered pass is told. */
export interface ScaleTriggerDeps {
  readonly pass: TriggerablePass;
  readonly now: () => number;
  readonly failed: (error: unknown) => void;
}

/** Runs scheduled passes for the timer and triggered ones for admissions. */
export class ScaleTrigger {
  #state: TriggerState = NO_PASS_YET;
  #running: Promise<void> | undefined;
  readonly #deps: ScaleTriggerDeps;

  constructor(deps: ScaleTriggerDeps) {
    this.#deps = deps;
  }

  /** The scheduled pass (the timer's), whose tally resets the trigger. */
  scheduled(): Promise<unknown> {
    return this.#deps.pass({
      triggered: false,
      onPlanned: (tally, at) => this.#planned(tally, at),
    });
  }

  /** Hears an admission decision: an allowed pod CREATE is a game server admitted. */
  decided(decision: HeardDecision): void {
    if (decision.resource !== 'pods' || decision.operation !== 'CREATE') return;
    if (!decision.allowed || decision.dryRun) return;
    const next = onAdmitted(this.#state, 1, this.#deps.now());
    this.#state = next.state;
    if (!next.wanted || this.#running) return;
    this.#running = this.#deps
      .pass({ triggered: true, onPlanned: (tally, at) => this.#planned(tally, at) })
      .then(() => undefined, this.#deps.failed)
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Waits for a triggered pass under way. */
  async settled(): Promise<void> {
    await this.#running;
  }

  #planned(tally: SlotTally, nowMs: number): void {
    this.#state = afterPass(tally, nowMs);
  }
}

/** What one scale scenario's runs are and what they give: the shapes the runners share. */
import type { DayOutcome, Scaler, Scenario } from './day.js';
import type { NodeHourFloors } from './floor.js';
import type { ScenarioVerdict } from './targets.js';
import type { TunedSetting } from './tuned-weeks.js';

/** A baseline run: its scaler, the peer it models, and why it is information only, if it is. */
export interface Baseline {
  readonly peer: 'paddle-soccer' | 'cluster-autoscaler' | 'karpenter';
  readonly make: (sc: Scenario) => Scaler;
  /** Set for a run printed but judged by no target, with why. */
  readonly informational?: string;
}

/** berth and every baseline over one scenario's day. */
export interface ScenarioResult {
  readonly scenario: string;
  readonly description: string;
  readonly berth: DayOutcome;
  /** berth on the 60 s schedule alone (no triggered passes), as AWS runs it: information only. */
  readonly berthScheduledOnly?: DayOutcome;
  readonly baselines: Readonly<Record<string, DayOutcome>>;
  /** Per peer, its best run: fewest waiting pods, then fewest node-hours. */
  readonly best: Readonly<Record<string, string>>;
  readonly targets: readonly ScenarioVerdict[];
  /** Each peer setting tuned in hindsight for this day, with the counts tried (`tuned-weeks.ts`). */
  readonly tunedForDay?: readonly TunedSetting[];
  /** What the day's arrivals alone allow (`scale/floor.ts`): information beside the targets. */
  readonly floors?: NodeHourFloors;
  /** An Agones-style day's clairvoyant schedule, of its game servers as measured (`agones.ts`). */
  readonly clairvoyantNodeHours?: number;
}

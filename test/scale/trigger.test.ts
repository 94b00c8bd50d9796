import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionTrigger } from '../../shared/scale/admission-trigger.js';
import { planScale } from '../../shared/scale/plan.js';
import { scalePolicy } from '../../shared/scale/policy.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { EMPTY_SCALE_MEMORY, NO_PASS_YET, type ScaleMemory } from '../../shared/scale/store.js';
import {
  afterPass,
  onAdmitted,
  scaleUpOnly,
  slackOf,
  TRIGGER_DEBOUNCE_MS,
  triggeredOutcome,
  triggeredView,
} from '../../shared/scale/trigger.js';
import { InProcessScaleTrigger } from '../../sim/fakes/scale-trigger.js';
import { berthCordoned, gameServers, node, passConfig, T0 } from './builders.js';

const MINUTE = 60_000;

describe('the scale-up trigger', () => {
  it('asks for a pass once the admitted game servers exhaust the slack the last pass left', () => {
    const plan = planScale(
      buildSnapshot([node('a')], gameServers('a', 20), {}),
      scalePolicy(passConfig({ bufferGameServers: 10 })),
      T0,
    );
    // 4 CPU: 40 slots, 20 taken, a buffer of 10: 10 to spare.
    const state = afterPass(plan.tally, T0);
    expect(state).toEqual({ slack: 10, passAtMs: T0, admitted: 0 });
    const ten = onAdmitted(state, 10, T0 + 20_000);
    expect(ten.wanted).toBe(false);
    const eleventh = onAdmitted(ten.state, 1, T0 + 21_000);
    expect(eleventh.wanted).toBe(true);
    // Asked for, it counts as run: the next admission within the debounce asks for nothing.
    expect(onAdmitted(eleventh.state, 1, T0 + 22_000).wanted).toBe(false);
    expect(onAdmitted(eleventh.state, 1, T0 + 21_000 + TRIGGER_DEBOUNCE_MS).wanted).toBe(true);
  });

  it('waits for the debounce after a pass, and asks at once before any', () => {
    const short = { slack: -5, passAtMs: T0, admitted: 0 };
    expect(onAdmitted(short, 1, T0 + TRIGGER_DEBOUNCE_MS - 1).wanted).toBe(false);
    expect(onAdmitted(short, 1, T0 + TRIGGER_DEBOUNCE_MS).wanted).toBe(true);
    expect(onAdmitted(NO_PASS_YET, 1, T0).wanted).toBe(true);
  });

  it('asks at most once a debounce, and never while the slack holds (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -20, max: 60 }),
        fc.array(fc.record({ gapMs: fc.nat(15_000), count: fc.integer({ min: 1, max: 5 }) }), {
          maxLength: 80,
        }),
        (slack, admissions) => {
          let state = { slack, passAtMs: T0, admitted: 0 };
          let now = T0;
          let total = 0;
          const asked: number[] = [];
          for (const { gapMs, count } of admissions) {
            now += gapMs;
            total += count;
            const next = onAdmitted(state, count, now);
            if (next.wanted) {
              expect(total).toBeGreaterThan(slack);
              asked.push(now);
            }
            state = next.state;
          }
          for (let i = 1; i < asked.length; i++) {
            expect((asked[i] ?? 0) - (asked[i - 1] ?? 0)).toBeGreaterThanOrEqual(
              TRIGGER_DEBOUNCE_MS,
            );
          }
        },
      ),
    );
  });

  it('lets a triggered pass see a wave that has just begun, prorated to a pass', () => {
    const memory: ScaleMemory = {
      ...EMPTY_SCALE_MEMORY,
      lastPassAtMs: T0,
      arrivals: [{ atMs: T0, count: 8 }],
      burstPeaks: [{ atMs: T0 - MINUTE, count: 30 }],
    };
    // 30 created in the 20 s since the pass: 90 a minute, three times the day's busiest pass.
    const created = [T0 - 5_000, ...Array.from({ length: 30 }, (_, i) => T0 + 1_000 + i * 500)];
    const view = triggeredView(memory, created, T0 + 20_000, MINUTE);
    expect(view.arrivals.at(-1)).toEqual({ atMs: T0 + 20_000, count: 90 });
    expect(view.priorPeak).toBe(30);
    // Before the debounce a few are not taken for a rate: at most the debounce's worth.
    expect(triggeredView(memory, created.slice(0, 4), T0 + 1_000, MINUTE).arrivals.at(-1)).toEqual({
      atMs: T0 + 1_000,
      count: 18,
    });
    // Without an earlier scheduled pass there is nothing to count from.
    expect(triggeredView(EMPTY_SCALE_MEMORY, created, T0, MINUTE)).toBe(EMPTY_SCALE_MEMORY);
  });

  it('carries out only what adds slots, and keeps timing the surplus unless it scaled up', () => {
    const policy = scalePolicy(passConfig({ bufferGameServers: 80 }));
    const nodes = [node('a'), berthCordoned('b', T0 - 10 * MINUTE)];
    const plan = planScale(buildSnapshot(nodes, gameServers('a', 30), {}), policy, T0);
    expect(plan.actions.map((a) => a.type)).toEqual(['uncordon', 'grow']);
    expect(scaleUpOnly(plan.actions).map((a) => a.type)).toEqual(['uncordon', 'grow']);
    const surplusPlan = planScale(
      buildSnapshot([node('a'), node('b'), berthCordoned('c', T0 - 10 * MINUTE)], [], {}),
      scalePolicy(passConfig({ bufferGameServers: 10 })),
      T0,
    );
    expect(surplusPlan.actions.map((a) => a.type)).toContain('cordon');
    expect(scaleUpOnly(surplusPlan.actions)).toEqual([]);
    const timing = { ...EMPTY_SCALE_MEMORY, surplusSinceMs: T0 - MINUTE };
    const outcome = { nowMs: T0, readyNodes: 2, surplus: true, removalsStarted: 1 };
    expect(triggeredOutcome(outcome, timing, [])).toEqual({ ...outcome, removalsStarted: 0 });
    expect(triggeredOutcome(outcome, timing, plan.actions).surplus).toBe(false);
    expect(triggeredOutcome(outcome, EMPTY_SCALE_MEMORY, []).surplus).toBe(false);
  });
});

describe('AdmissionTrigger', () => {
  it('asks once when admitted game servers exhaust the slack, then waits out the debounce', async () => {
    let now = T0;
    const store = new InProcessScaleTrigger();
    const asked: number[] = [];
    const failures: unknown[] = [];
    const trigger = new AdmissionTrigger({
      store,
      ask: async () => {
        asked.push(now);
      },
      now: () => now,
      failed: (error) => failures.push(error),
    });
    const tally = planScale(
      buildSnapshot([node('a')], gameServers('a', 28), {}),
      scalePolicy(passConfig({ bufferGameServers: 10 })),
      T0,
    ).tally;
    // 12 free, a buffer of 10: the third game server asks for a pass.
    await store.passed(slackOf(tally), now);
    now += 20_000;
    await trigger.counted(1);
    await trigger.counted(1);
    expect(asked).toEqual([]);
    await trigger.counted(1);
    expect(asked).toEqual([T0 + 20_000]);
    // Within the debounce nothing more is asked, however many come.
    for (let i = 0; i < 5; i++) await trigger.counted(1);
    expect(asked).toHaveLength(1);
    now += TRIGGER_DEBOUNCE_MS;
    await trigger.counted(1);
    expect(asked).toEqual([T0 + 20_000, T0 + 20_000 + TRIGGER_DEBOUNCE_MS]);
    expect(failures).toEqual([]);
  });

  it('asks for a pass before any, and reports a failed ask instead of throwing', async () => {
    const failures: unknown[] = [];
    const trigger = new AdmissionTrigger({
      store: new InProcessScaleTrigger(),
      ask: async () => {
        throw new Error('TooManyRequestsException');
      },
      now: () => T0,
      failed: (error) => failures.push(error),
    });
    await expect(trigger.counted(1)).resolves.toBeUndefined();
    expect(failures).toEqual([new Error('TooManyRequestsException')]);
  });

  it('asks at most once a debounce between any number of callers (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -5, max: 20 }),
        fc.array(fc.record({ gapMs: fc.nat(6_000), caller: fc.nat(3) }), { maxLength: 60 }),
        async (slack, admissions) => {
          const store = new InProcessScaleTrigger();
          let now = T0;
          await store.passed(slack, now);
          const asked: number[] = [];
          const callers = [0, 1, 2, 3].map(
            () =>
              new AdmissionTrigger({
                store,
                ask: async () => {
                  asked.push(now);
                },
                now: () => now,
                failed: (error) => {
                  throw error;
                },
              }),
          );
          for (const [index, { gapMs, caller }] of admissions.entries()) {
            now += gapMs;
            await callers[caller]?.counted(1);
            // None before the slack is used up.
            if (index + 1 <= slack) expect(asked).toEqual([]);
          }
          for (let i = 1; i < asked.length; i++) {
            expect((asked[i] ?? 0) - (asked[i - 1] ?? 0)).toBeGreaterThanOrEqual(
              TRIGGER_DEBOUNCE_MS,
            );
          }
          if (asked.length > 0)
            expect((asked[0] ?? 0) - T0).toBeGreaterThanOrEqual(TRIGGER_DEBOUNCE_MS);
        },
      ),
    );
  });
});

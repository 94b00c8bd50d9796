/** Small nodes and pod events for the ENI peer models' tests. */
import type { NodeSpec, PodEvent } from '../../bench/eni/workload.js';

/** A node of `type` that joins at 0, its pool loop in phase 0. */
export const node = (name: string, type: string): NodeSpec => ({
  name,
  type,
  slots: 32,
  joinAt: 0,
  cniPhase: 0,
});

/** `count` pods arriving on node 0 one a second from `from`, leaving at `leave` if given. */
export function pods(count: number, from: number, leave?: number): PodEvent[] {
  const events: PodEvent[] = [];
  for (let i = 0; i < count; i++) {
    events.push({ at: from + i, kind: 'arrive', node: 0, pod: `gs-${i}` });
    if (leave !== undefined) {
      events.push({ at: leave + i, kind: 'depart', node: 0, pod: `gs-${i}` });
    }
  }
  return events.sort((a, b) => a.at - b.at);
}

/** A run's calls of one action. */
export const calls = (run: { callsByAction: Record<string, number> }, action: string) =>
  run.callsByAction[action] ?? 0;

/**
 * The store as one pass sees it: each subnet's shortage marks read once per pass instead of once
 * per pool (a hundred pools in one subnet would read the same two items a hundred times). A mark
 * another process sets meanwhile is seen by the next pass; the pass's own marks are seen at once.
 * Marks only spare EC2 calls that would fail: a stale one costs a refused call, never a wrong write.
 */
import { type EniStore, forwarding, type SubnetShortage } from './store.js';

export function withPassMarks(store: EniStore): EniStore {
  const marks = new Map<string, Promise<number>>();
  const key = (subnetId: string, what: SubnetShortage) => `${subnetId}#${what}`;
  return {
    ...forwarding(store),
    subnetShortUntil: (subnetId, what) => {
      const at = key(subnetId, what);
      let mark = marks.get(at);
      if (mark === undefined) {
        mark = store.subnetShortUntil(subnetId, what);
        // A failed read is not remembered: the next pool of the pass asks again.
        mark.catch(() => marks.delete(at));
        marks.set(at, mark);
      }
      return mark;
    },
    markSubnetShort: async (subnetId, what, until) => {
      await store.markSubnetShort(subnetId, what, until);
      const known = await (marks.get(key(subnetId, what)) ?? Promise.resolve(0)).catch(() => 0);
      marks.set(key(subnetId, what), Promise.resolve(Math.max(known, until)));
    },
  };
}

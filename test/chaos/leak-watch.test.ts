import { describe, expect, it } from 'vitest';
import { LeakWatch, type StoreView } from '../../bench/support/leak-watch.js';
import { COMMIT_WINDOW_MS } from '../../shared/vocabulary/commit-window.js';

const view = (held: Record<string, string>, records: Record<string, number> = {}): StoreView => ({
  held: new Map(Object.entries(held)),
  records: new Map(
    Object.entries(records).map(([id, createdAt]) => [id, { owner: `default/${id}`, createdAt }]),
  ),
});
const listing = (carried: string[] = [], runningPods: string[] = []) => ({
  carried: new Set(carried),
  runningPods: new Set(runningPods),
});

describe('LeakWatch', () => {
  it('accepts a leak freed on the grace-th completed pass that found it', () => {
    const watch = new LeakWatch(3);
    const leaked = view({ 'nodePort#r#7': 'a' });
    watch.observe(leaked, listing(), leaked);
    watch.observe(leaked, listing(), leaked);
    watch.observe(leaked, listing(), view({}));
    expect(watch.report()).toEqual({ leaks: 1, maxPassesToFree: 3, overdue: [], open: 0 });
  });

  it('reports a leak still held after the grace-th pass that found it', () => {
    const watch = new LeakWatch(2);
    const leaked = view({}, { p1: 100 });
    watch.observe(leaked, listing(), leaked);
    watch.observe(leaked, listing(), leaked);
    expect(watch.report().overdue).toEqual(['pod#p1@100 still held after 2 passes']);
  });

  it('starts a count again when the value is carried, or held by another holder', () => {
    const watch = new LeakWatch(2);
    const leaked = view({ v: 'a' });
    watch.observe(leaked, listing(), leaked);
    watch.observe(leaked, listing(['v']), leaked);
    watch.observe(leaked, listing(), leaked);
    watch.observe(view({ v: 'b' }), listing(), view({ v: 'b' }));
    expect(watch.report()).toEqual({ leaks: 3, maxPassesToFree: 1, overdue: [], open: 1 });
  });

  it('lets a failed pass end counts but never add to them', () => {
    const watch = new LeakWatch(2);
    const leaked = view({ v: 'a', w: 'a' });
    watch.observe(leaked, listing(), leaked);
    watch.failed(leaked, listing(['w']));
    watch.observe(leaked, listing(), leaked);
    expect(watch.report().overdue).toEqual(['v@a still held after 2 passes']);
  });

  it('counts no pass that began less than the commit window after the claim', () => {
    const watch = new LeakWatch(2);
    const leaked: StoreView = {
      ...view({ v: 'a' }, { p1: 1_000 }),
      claimedAt: new Map([['v', 1_000]]),
    };
    const at = (listedAt: number) => ({ ...listing(), listedAt });
    watch.observe(leaked, at(1_000 + COMMIT_WINDOW_MS - 1), leaked);
    watch.observe(leaked, at(1_000 + COMMIT_WINDOW_MS), leaked);
    expect(watch.report()).toEqual({ leaks: 2, maxPassesToFree: 0, overdue: [], open: 2 });
    watch.observe(leaked, at(1_000 + COMMIT_WINDOW_MS + 1), leaked);
    expect(watch.report().overdue).toEqual([
      'v@a still held after 2 passes',
      'pod#p1@1000 still held after 2 passes',
    ]);
  });
});

/** The one RFC 6902 applier the loopback apiserver, the simulator, the benches and tests share. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyPatch } from '../../sim/fakes/json-patch.js';

describe('applyPatch', () => {
  it('adds, replaces, removes, moves and copies as RFC 6902 says', () => {
    const doc = { a: { b: 1 }, list: [1, 2] };

    const out = applyPatch(doc, [
      { op: 'add', path: '/list/1', value: 9 },
      { op: 'add', path: '/list/-', value: 3 },
      { op: 'replace', path: '/a/b', value: 2 },
      { op: 'copy', from: '/a', path: '/c' },
      { op: 'move', from: '/c/b', path: '/d' },
      { op: 'remove', path: '/list/0' },
      { op: 'add', path: '/e~1f', value: 'slash' },
      { op: 'add', path: '/g~0h', value: 'tilde' },
      { op: 'test', path: '/a', value: { b: 2 } },
    ]);

    expect(out).toEqual({
      a: { b: 2 },
      list: [9, 2, 3],
      c: {},
      d: 2,
      'e/f': 'slash',
      'g~h': 'tilde',
    });
    expect(doc).toEqual({ a: { b: 1 }, list: [1, 2] });
  });

  it('fails removing, replacing or testing a path that is not there, and adding under one', () => {
    for (const op of [
      { op: 'remove', path: '/x' },
      { op: 'replace', path: '/x', value: 1 },
      { op: 'test', path: '/x', value: null },
      { op: 'add', path: '/x/y', value: 1 },
    ]) {
      expect(() => applyPatch({}, [op])).toThrow();
    }
  });

  it('leaves any document unchanged when a test of its own value passes', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (doc) => {
        const json = JSON.parse(JSON.stringify(doc));
        expect(applyPatch(json, [{ op: 'test', path: '', value: json }])).toEqual(json);
      }),
    );
  });
});

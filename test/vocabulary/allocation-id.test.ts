import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  allocationIdForUid,
  isAllocationId,
  namesOwner,
  newAllocationId,
  ownerNamingAllocationId,
} from '../../shared/vocabulary/allocation-id.js';

const web = { kind: 'Service', namespace: 'games', name: 'web' };

describe('allocation ids that name their owner', () => {
  it('have the shape of every berth id and differ per call', () => {
    const a = ownerNamingAllocationId(web, (n) => randomBytes(n));
    const b = ownerNamingAllocationId(web, (n) => randomBytes(n));
    expect(isAllocationId(a)).toBe(true);
    expect(a).not.toBe(b);
    expect(a.slice(0, 15)).toBe(b.slice(0, 15));
  });

  it('name their own object only: not another name, namespace or kind, nor a nameless one', () => {
    const id = ownerNamingAllocationId(web, (n) => randomBytes(n));
    expect(namesOwner(id, web)).toBe(true);
    expect(namesOwner(id, { ...web, name: 'web2' })).toBe(false);
    expect(namesOwner(id, { ...web, namespace: 'other' })).toBe(false);
    expect(namesOwner(id, { ...web, kind: 'Pod' })).toBe(false);
    expect(namesOwner(id, { ...web, name: '' })).toBe(false);
  });

  it('are told apart from random ids and from other owners', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.string({ minLength: 1, maxLength: 20 }),
        (a, b) => {
          fc.pre(a !== b);
          const id = ownerNamingAllocationId({ ...web, name: a }, (n) => randomBytes(n));
          expect(namesOwner(id, { ...web, name: b })).toBe(false);
        },
      ),
    );
    // A random id names nobody (but with odds of 2^-75).
    expect(
      namesOwner(
        newAllocationId((n) => randomBytes(n)),
        web,
      ),
    ).toBe(false);
  });
});

describe('allocation ids derived from a uid', () => {
  it('have the shape of every berth id, and one uid always gives the same', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (uid, other) => {
        const id = allocationIdForUid(uid);
        expect(isAllocationId(id)).toBe(true);
        expect(allocationIdForUid(uid)).toBe(id);
        if (other !== uid) expect(allocationIdForUid(other)).not.toBe(id);
      }),
    );
  });
});

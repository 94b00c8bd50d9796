import { describe, expect, it } from 'vitest';
import {
  isGeneratedName,
  namedFrom,
  type Owner,
  sameObject,
} from '../../shared/vocabulary/owner.js';

const unnamed: Owner = {
  kind: 'Pod',
  namespace: 'games',
  name: '',
  generateName: 'gs-',
  request: 'req-1',
};
const named: Owner = { kind: 'Pod', namespace: 'games', name: 'gs-x7k2p', generateName: 'gs-' };

describe('the same object', () => {
  it('is the same kind, namespace, name and generateName', () => {
    expect(sameObject(named, { ...named })).toBe(true);
    expect(sameObject(named, { ...named, kind: 'Service' })).toBe(false);
    expect(sameObject(named, { ...named, namespace: 'other' })).toBe(false);
    expect(sameObject(named, { ...named, name: 'gs-other' })).toBe(false);
    expect(sameObject(named, { ...named, generateName: '' })).toBe(false);
  });

  it('reads an absent generateName as an empty one', () => {
    const service: Owner = { kind: 'Service', namespace: 'games', name: 'web' };
    expect(sameObject(service, { ...service, generateName: '' })).toBe(true);
  });

  it('is, before the apiserver names it, only the request that created it', () => {
    expect(sameObject(unnamed, { ...unnamed })).toBe(true);
    expect(sameObject(unnamed, { ...unnamed, request: 'req-2' })).toBe(false);
    const { request: _, ...unrequested } = unnamed;
    expect(sameObject(unrequested, unrequested)).toBe(false);
  });
});

describe('learning a name', () => {
  it("takes a named object of the record's kind and namespace that carries what was recorded", () => {
    expect(namedFrom(unnamed, named, () => true)).toBe(true);
    expect(namedFrom(unnamed, named, () => false)).toBe(false);
    expect(namedFrom(unnamed, { ...named, namespace: 'other' }, () => true)).toBe(false);
    expect(namedFrom(unnamed, { ...named, kind: 'Service' }, () => true)).toBe(false);
  });

  it('never for a record already named, or an object not yet named', () => {
    expect(namedFrom(named, named, () => true)).toBe(false);
    expect(namedFrom(unnamed, unnamed, () => true)).toBe(false);
  });

  it('asks for the evidence only once the rest holds', () => {
    let asked = 0;
    namedFrom(named, named, () => {
      asked++;
      return true;
    });
    expect(asked).toBe(0);
  });
});

describe('generated names', () => {
  it('are the generateName and more, of at most 58 characters of it', () => {
    expect(isGeneratedName('gs-x7k2p', 'gs-')).toBe(true);
    expect(isGeneratedName('gs-', 'gs-')).toBe(false);
    expect(isGeneratedName('lobby-x1', 'gs-')).toBe(false);
    const long = `${'g'.repeat(70)}-`;
    expect(isGeneratedName(`${'g'.repeat(58)}x7k2p`, long)).toBe(true);
  });
});

import { loadAllYaml } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { berthManifests } from '../../shared/manifests/manifests.js';
import { printManifests, toYaml } from '../../shared/manifests/print.js';

const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

/** Reads YAML the way client-node does (js-yaml), as a plain value: objects without a kind pass through. */
function readBack(text: string): unknown[] {
  return loadAllYaml(text);
}

describe('toYaml', () => {
  it('reads back as the same value for any JSON document', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const expected = JSON.parse(JSON.stringify({ value }));
        expect(readBack(toYaml({ value }))).toEqual([expected]);
      }),
      { numRuns: 300 },
    );
  });

  it('quotes strings a YAML 1.1 reader would take for booleans, null or numbers', () => {
    const text = toYaml({
      a: 'yes',
      b: 'On',
      c: 'null',
      d: '8443',
      e: 'true',
      f: 'y',
      g: '1e3',
      h: '~',
    });
    expect(text).toBe(
      [
        'a: "yes"',
        'b: "On"',
        'c: "null"',
        'd: "8443"',
        'e: "true"',
        'f: "y"',
        'g: "1e3"',
        'h: "~"',
        '',
      ].join('\n'),
    );
  });

  it('writes plain words plainly and nests sequences of maps the kubectl way', () => {
    expect(
      toYaml({
        kind: 'ClusterRole',
        rules: [{ apiGroups: [''], verbs: ['get', 'list'] }],
        empty: {},
      }),
    ).toBe(
      [
        'kind: ClusterRole',
        'rules:',
        '  - apiGroups:',
        '      - ""',
        '    verbs:',
        '      - get',
        '      - list',
        'empty: {}',
        '',
      ].join('\n'),
    );
  });

  it('leaves out undefined members as JSON does', () => {
    expect(toYaml({ a: 1, b: undefined })).toBe('a: 1\n');
  });
});

describe('printManifests', () => {
  const objects = berthManifests(
    { url: 'https://127.0.0.1:8443/admission', caPem: CA_PEM },
    'games',
    parseConfig({ scale: { nodePool: { type: 'karpenter', name: 'games' } } }).scale,
  );

  it('prints YAML documents that read back as the same Kubernetes objects', () => {
    const text = printManifests(objects, 'yaml');
    expect(text.startsWith('---\n')).toBe(true);
    expect(readBack(text)).toEqual(objects.map((object) => readBack(JSON.stringify(object))[0]));
  });

  it('keeps the CEL match condition intact through YAML', () => {
    const text = printManifests(objects, 'yaml');
    expect(text).toContain(
      `expression: "has(object.metadata.annotations) && 'berth.dev/ports' in object.metadata.annotations"`,
    );
  });

  it('prints JSON as one v1 List', () => {
    const parsed = JSON.parse(printManifests(objects, 'json'));
    expect(parsed).toEqual({
      apiVersion: 'v1',
      kind: 'List',
      items: JSON.parse(JSON.stringify(objects)),
    });
  });
});

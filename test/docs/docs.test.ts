import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentFiles, loadResults } from '../../scripts/docs.js';
import { renderRegions } from '../../scripts/docs-regions.js';
import { parseConfig } from '../../shared/config/schema.js';
import { BLOCK_SIZE } from '../../shared/net/offset.js';
import { COUNT_BLOCK_PORTS } from '../../shared/store/dynamo-host-port-store.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const read = (file: string) => readFile(join(ROOT, file), 'utf8');

/** Keys whose value is a whole object a user writes at once, not a section of keys. */
const VALUE_OBJECTS = new Set(['nodePortRange', 'hostPortRanges', 'scale.nodePool']);

/** Every key path of the config with its defaults (`scale.demand.enabled`, ...). */
function keyPaths(value: unknown, prefix = ''): string[] {
  if (
    value === null ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    VALUE_OBJECTS.has(prefix)
  ) {
    return [prefix];
  }
  return Object.entries(value).flatMap(([key, inner]) =>
    keyPaths(inner, prefix ? `${prefix}.${key}` : key),
  );
}

describe('README.md and docs/', () => {
  it('quote every benchmark figure from bench/results as npm run docs writes it', async () => {
    const results = await loadResults();
    for (const file of await documentFiles()) {
      const text = await read(file);
      expect(renderRegions(text, results), `${file}: run npm run docs`).toBe(text);
    }
  });

  it('refer to nothing outside the repository and to no machine of their authors', async () => {
    const outside =
      /contract section|the contract\b|closing notes|\/work\/|this (2-core )?machine|2-core|machine image/i;
    for (const file of await documentFiles()) {
      const hits = (await read(file)).split('\n').filter((line) => outside.test(line));
      expect(hits, file).toEqual([]);
    }
  });

  it('link only to files that exist', async () => {
    for (const file of await documentFiles()) {
      const text = await read(file);
      const targets = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
        .map((match) => match[1] ?? '')
        .filter((target) => !/^[a-z]+:/.test(target));
      for (const target of targets) {
        expect(existsSync(join(ROOT, dirname(file), target)), `${file} links ${target}`).toBe(true);
      }
    }
  });

  it('keep the README a front door: a few hundred lines', async () => {
    expect((await read('README.md')).split('\n').length).toBeLessThanOrEqual(300);
  });

  it('name every configuration key in the reference', async () => {
    const reference = await read('docs/configuration.md');
    for (const path of keyPaths(parseConfig({}))) {
      expect(reference, `docs/configuration.md lacks \`${path}\``).toContain(`\`${path}\``);
    }
  });

  it('give the block sizes the code uses: ids per range block, ports per count block', async () => {
    const texts = await Promise.all((await documentFiles()).map(read));
    const all = texts.join('\n');
    for (const [, n] of all.matchAll(/blocks? (?:item )?of (?:up to )?(\d+) (?:values|ids)/g)) {
      expect(Number(n)).toBe(BLOCK_SIZE);
    }
    for (const [, n] of all.matchAll(/blocks? of (\d+) ports|count block \((\d+) ports\)/g)) {
      if (n !== undefined) expect(Number(n)).toBe(COUNT_BLOCK_PORTS);
    }
    expect(all).toMatch(new RegExp(`blocks of ${BLOCK_SIZE} values`));
  });
});

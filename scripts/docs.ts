/**
 * `npm run docs`: rewrites the generated regions of README.md and docs/*.md from the committed
 * benchmark results (bench/results/*.json). `npm run docs -- --check` changes nothing and exits
 * 1 naming each document whose regions are stale.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ResultsByName, renderRegions } from './docs-regions.js';

const ROOT = new URL('..', import.meta.url).pathname;

/** Every committed benchmark result, by name. */
export async function loadResults(root = ROOT): Promise<ResultsByName> {
  const dir = join(root, 'bench/results');
  const files = (await readdir(dir)).filter((file) => file.endsWith('.json')).sort();
  const entries = await Promise.all(
    files.map(async (file) => [
      file.replace(/\.json$/, ''),
      JSON.parse(await readFile(join(dir, file), 'utf8')),
    ]),
  );
  return Object.fromEntries(entries);
}

/** The documents: README.md and every Markdown file under docs/, relative to the root. */
export async function documentFiles(root = ROOT): Promise<string[]> {
  const docs = (await readdir(join(root, 'docs'))).filter((file) => file.endsWith('.md')).sort();
  return ['README.md', ...docs.map((file) => `docs/${file}`)];
}

/**
 * Rewrites every document's generated regions from the committed results (with `check`, only
 * looks); answers the documents that were, or would be, rewritten.
 */
export async function renderDocuments(check = false, root = ROOT): Promise<string[]> {
  const results = await loadResults(root);
  const stale: string[] = [];
  for (const file of await documentFiles(root)) {
    const path = join(root, file);
    const text = await readFile(path, 'utf8');
    const rendered = renderRegions(text, results);
    if (rendered === text) continue;
    stale.push(file);
    if (!check) await writeFile(path, rendered);
  }
  return stale;
}

async function main(check: boolean): Promise<number> {
  const stale = await renderDocuments(check);
  if (check && stale.length > 0) {
    process.stderr.write(`stale generated regions in ${stale.join(', ')}: run npm run docs\n`);
    return 1;
  }
  if (!check)
    process.stdout.write(`rewrote ${stale.length === 0 ? 'nothing' : stale.join(', ')}\n`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.includes('--check'));
}

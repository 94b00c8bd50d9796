import { describe, expect, it } from 'vitest';
import { bundlePlugin, PLUGIN_ENTRY } from '../../cni/build.js';

/** The files `file` imports statically (`import … from "./x.mjs"`, `import "./x.mjs"`). */
const staticImports = (text: string) =>
  [...text.matchAll(/(?:from|import)\s*"\.\/([^"]+)"/g)].map((match) => match[1] ?? '');

describe('berth-cni’s bundle', () => {
  it('reaches Node’s built-ins by lookup, never through an ES module import of Node’s own', async () => {
    const files = await bundlePlugin();
    for (const [name, text] of Object.entries(files)) {
      expect(text, name).not.toMatch(
        /(?:from|import)\s*"(?:node:)?(?:fs|path|crypto|child_process|module)"/,
      );
      // Every `require` was resolved when it was built: none is left for the runtime to find.
      expect(text, name).not.toContain('Dynamic require of');
    }
  }, 120_000);

  it('starts an ADD with the handout code alone: no HTTP client, signer or schema library', async () => {
    const files = await bundlePlugin();
    const loaded = new Set<string>();
    const visit = (name: string) => {
      if (loaded.has(name)) return;
      loaded.add(name);
      for (const next of staticImports(files[name] ?? '')) visit(next);
    };
    visit(PLUGIN_ENTRY);
    const size = [...loaded].reduce((sum, name) => sum + (files[name]?.length ?? 0), 0);
    expect(size).toBeLessThan(40_000);
    expect(Object.values(files).reduce((sum, text) => sum + text.length, 0)).toBeGreaterThan(
      10 * size,
    );
  }, 120_000);
});

/**
 * Builds berth-cni for a node: one bundled ES module (no node_modules on the node) and a `sh`
 * wrapper named as the CNI type, which runs it with a Node.js runtime. The DaemonSet installs
 * both with the runtime copied from a public Node.js image; tests point the wrapper at their own.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** The CNI type the plugin is installed as. */
export const PLUGIN_TYPE = 'berth-cni';

/** Where the bundle and the runtime live beside the wrapper: `/opt/cni/bin/berth-cni.d/`. */
export const SUPPORT_DIR = `${PLUGIN_TYPE}.d`;

/** The plugin's entry file; the rest of the bundle are chunks it imports (`berth-cni-*.mjs`). */
export const PLUGIN_ENTRY = 'berth-cni.mjs';

/** Every name a Node.js built-in module is imported by: `fs`, `node:fs`, `fs/promises`, … */
const BUILTIN = new RegExp(
  `^(node:)?(${builtinModules.map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`,
);

/**
 * Node's built-in modules reached through `process.getBuiltinModule`, never an ESM import of
 * Node's own. Node gives an imported built-in an ESM facade by reading every one of its exports,
 * and reading node:fs's loads its lazy stream classes and the stream modules behind them: about
 * 6 ms of CPU on every start of the plugin, against under 1 ms for `getBuiltinModule` (`perf
 * stat`, 30 interleaved starts each). As a CommonJS module of the bundle, a built-in's exports
 * are read where they are used. A dynamic `import()` keeps Node's own (a CommonJS module's
 * namespace would hold only its default); berth's code loads a built-in late through
 * `process.getBuiltinModule` instead.
 */
const builtinsByLookup: Plugin = {
  name: 'builtins-by-lookup',
  setup(context) {
    context.onResolve({ filter: BUILTIN }, (args) =>
      args.kind === 'dynamic-import' ? undefined : { path: args.path, namespace: 'builtin' },
    );
    context.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = process.getBuiltinModule(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * The bundled plugin: file name → text, the entry and the chunks it loads. Split, so that a start
 * loads only what the command needs: an ADD from the node's own set never loads the HTTP client,
 * its SigV4 signer or the schema library, most of the bundle (a plugin's start is most of the
 * ADD the runtime waits for).
 */
export async function bundlePlugin(): Promise<Readonly<Record<string, string>>> {
  const result = await build({
    entryPoints: { 'berth-cni': fileURLToPath(new URL('./main.ts', import.meta.url)) },
    bundle: true,
    splitting: true,
    write: false,
    outdir: '/berth-cni',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'berth-cni-[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    legalComments: 'none',
    // Built-ins resolved at build time, `require('fs')` in the AWS helpers included, so the
    // bundle needs no `require` of its own.
    plugins: [builtinsByLookup],
  });
  const files = Object.fromEntries(
    result.outputFiles.map((file) => [file.path.replace(/^.*\//, ''), file.text]),
  );
  if (!files[PLUGIN_ENTRY]) throw new Error(`esbuild produced no ${PLUGIN_ENTRY} for cni/main.ts`);
  return files;
}

/**
 * The CA berth-cni trusts besides the public roots, beside the bundle when installed: the local
 * server's own (`berth manifests --cni --local`), whose certificate no public root signs.
 */
export const PLUGIN_CA_FILE = 'ca.crt';

/**
 * The wrapper: runs the bundle beside it with `node` (an absolute path, or one beside it),
 * trusting `PLUGIN_CA_FILE` when one was installed, and starting nothing else. Node.js reads
 * NODE_EXTRA_CA_CERTS once, at start, and adds it to the roots every TLS connection (fetch's
 * too) trusts (https://nodejs.org/api/cli.html#node_extra_ca_certsfile).
 */
export function wrapperScript(node: string): string {
  const runtime = node.startsWith('/') ? `'${node}'` : `"$here/${SUPPORT_DIR}/${node}"`;
  const ca = `"$here/${SUPPORT_DIR}/${PLUGIN_CA_FILE}"`;
  return [
    '#!/bin/sh',
    "# berth-cni: berth's CNI IPAM plugin; the README's section on ENI IPs explains it.",
    // The directory by the shell's own expansion: `$(dirname "$0")` would start a program on
    // every invocation the runtime waits for.
    `case $0 in */*) here=\${0%/*} ;; *) here=. ;; esac`,
    `if [ -f ${ca} ]; then export NODE_EXTRA_CA_CERTS=${ca}; fi`,
    `exec ${runtime} --disable-warning=ExperimentalWarning "$here/${SUPPORT_DIR}/${PLUGIN_ENTRY}" "$@"`,
    '',
  ].join('\n');
}

/** Writes `<dir>/berth-cni` and the bundle under `<dir>/berth-cni.d/`; returns the wrapper's path. */
export async function installPlugin(dir: string, node: string = process.execPath): Promise<string> {
  await mkdir(join(dir, SUPPORT_DIR), { recursive: true });
  for (const [name, text] of Object.entries(await bundlePlugin())) {
    await writeFile(join(dir, SUPPORT_DIR, name), text);
  }
  const wrapper = join(dir, PLUGIN_TYPE);
  await writeFile(wrapper, wrapperScript(node));
  await chmod(wrapper, 0o755);
  return wrapper;
}

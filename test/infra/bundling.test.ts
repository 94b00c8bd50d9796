/**
 * The functions as Lambda will load them. stack.test.ts checks the stack's layout without
 * bundling; here one BerthFunction goes through the real NodejsFunction bundling (local esbuild,
 * no Docker), and every handler goes through one esbuild build with the same options, so an
 * import that cannot be bundled fails here rather than at `cdk deploy`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { AttributeType, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Tracing } from 'aws-cdk-lib/aws-lambda';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import {
  BerthFunction,
  FUNCTION_NAMES,
  handlerEntry,
  OPTIONAL_FUNCTION_NAMES,
  RECORD_FUNCTION_NAMES,
} from '../../infra/constructs/berth-function.js';
import { ACCELERATOR_HANDLER_ENTRY } from '../../infra/constructs/custom-routing-accelerator.js';

describe('BerthFunction bundling', () => {
  it('bundles a function as one ESM file with the require banner and a source map', () => {
    const app = new App();
    const stack = new Stack(app, 'Bundling');
    const table = new TableV2(stack, 'Table', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
    });
    new BerthFunction(stack, 'Admission', {
      clusters: ['games'],
      name: 'admission',
      description: 'bundling check',
      table,
      configDocument: { cluster: 'games' },
      tracing: Tracing.ACTIVE,
      memorySize: 512,
      timeout: Duration.seconds(5),
    });
    const assembly = app.synth();
    const template = assembly.getStackByName('Bundling').template as {
      Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
    };
    const functions = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function',
    );
    expect(functions).toHaveLength(1);
    const key = String(functions[0]?.Properties.Code?.S3Key).replace(/\.zip$/, '');
    const bundle = join(assembly.directory, `asset.${key}`, 'index.mjs');
    expect(existsSync(bundle)).toBe(true);
    expect(
      readFileSync(bundle, 'utf8').startsWith('import { createRequire as __berthCreateRequire }'),
    ).toBe(true);
    expect(existsSync(`${bundle}.map`)).toBe(true);
  });

  it('bundles every handler without an unresolved import', async () => {
    const names = [...FUNCTION_NAMES, ...RECORD_FUNCTION_NAMES, ...OPTIONAL_FUNCTION_NAMES];
    const entries = {
      ...Object.fromEntries(names.map((name) => [name, handlerEntry(name)])),
      // The custom routing accelerator's provider steps.
      'custom-routing': ACCELERATOR_HANDLER_ENTRY,
    };
    const result = await build({
      entryPoints: entries,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      mainFields: ['module', 'main'],
      outdir: join(tmpdir(), 'berth-bundle-check'), // named only: write is false
      outExtension: { '.js': '.mjs' },
      write: false,
      logLevel: 'silent',
    });
    expect(result.errors).toEqual([]);
    expect(result.outputFiles.map((f) => f.path.split('/').at(-1)).sort()).toEqual(
      Object.keys(entries)
        .map((name) => `${name}.mjs`)
        .sort(),
    );
  });

  it.each(['admission', 'capacity'] as const)(
    'keeps the Kubernetes client out of the %s function',
    async (name) => {
      // The webhook reads nothing from the cluster in its path, the capacity API nothing from any
      // cluster: loading @kubernetes/client-node (about 870 files) would double the bundle and the
      // cold start. An import of a pass's Lambda wiring into what admission builds brought it in once.
      const result = await build({
        entryPoints: [handlerEntry(name)],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node24',
        mainFields: ['module', 'main'],
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      const inputs = Object.keys(result.metafile.inputs);
      expect(inputs.some((input) => input.startsWith('shared/app/'))).toBe(true);
      expect(inputs.filter((input) => input.includes('@kubernetes/client-node'))).toEqual([]);
    },
  );
});

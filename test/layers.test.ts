/**
 * The layer rules themselves: a small tree planted with one import of each forbidden kind is
 * cruised with the project's own `.dependency-cruiser.cjs`, so a rule that stopped matching (a
 * mistyped pattern, a layer left out) fails here rather than passing `npm test` silently.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cruise, type IForbiddenRuleType } from 'dependency-cruiser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const { forbidden } = createRequire(import.meta.url)('../.dependency-cruiser.cjs') as {
  forbidden: IForbiddenRuleType[];
};

/** Each planted file and what it imports (relative specifiers, as berth writes them). */
const TREE: Readonly<Record<string, readonly string[]>> = {
  'shared/vocabulary/labels.ts': ['../net/ip.js'],
  'shared/net/ip.ts': [],
  'shared/config/schema.ts': ['../vocabulary/labels.js'],
  'shared/k8s/cluster-api.ts': ['../admission/pods.js'],
  'shared/hostports/store.ts': ['./choice.js'],
  'shared/hostports/choice.ts': ['./store.js', '../admission/pods.js'],
  'shared/admission/pods.ts': ['../hostports/choice.js', '../app/runtime.js'],
  'shared/app/runtime.ts': ['../admission/pods.js'],
  'functions/admission/handler.ts': [
    '../../shared/app/runtime.js',
    '../../shared/config/schema.js',
  ],
  'cli/main.ts': ['../shared/app/runtime.js', '../shared/k8s/cluster-api.js'],
  'bench/hostports.ts': ['../test/support/reviews.js', '../sim/world.js'],
  'sim/world.ts': ['../bench/hostports.js'],
  'test/support/reviews.ts': [],
};

let root: string;
let violations: { rule: string; from: string; to: string }[];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-layers-'));
  for (const [file, imports] of Object.entries(TREE)) {
    await mkdir(dirname(join(root, file)), { recursive: true });
    const body = imports.map((spec, i) => `import * as m${i} from '${spec}';\nvoid m${i};\n`);
    await writeFile(join(root, file), `${body.join('')}export const here = 1;\n`);
  }
  await writeFile(
    join(root, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' } }),
  );
  const cwd = process.cwd();
  process.chdir(root);
  try {
    const result = await cruise(['shared', 'functions', 'cli', 'bench', 'sim'], {
      ruleSet: { forbidden },
      tsPreCompilationDeps: true,
      tsConfig: { fileName: 'tsconfig.json' },
      enhancedResolveOptions: { extensions: ['.ts', '.js'] },
      validate: true,
    });
    const output = result.output as {
      summary: { violations: { rule: { name: string }; from: string; to: string }[] };
    };
    violations = output.summary.violations.map((v) => ({
      rule: v.rule.name,
      from: v.from,
      to: v.to,
    }));
  } finally {
    process.chdir(cwd);
  }
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The rules a planted import from `from` to `to` broke. */
function broken(from: string, to: string): string[] {
  return violations.filter((v) => v.from === from && v.to === to).map((v) => v.rule);
}

describe('the layer rules', () => {
  it('keeps the vocabulary from importing anything of berth’s, even address math', () => {
    expect(broken('shared/vocabulary/labels.ts', 'shared/net/ip.ts')).toContain(
      'vocabulary-stands-alone',
    );
  });

  it('refuses a port that imports the webhook above it', () => {
    expect(broken('shared/k8s/cluster-api.ts', 'shared/admission/pods.ts')).toContain(
      'layer-ports',
    );
  });

  it('places a domain folder’s store module with the ports, below its own domain', () => {
    expect(broken('shared/hostports/store.ts', 'shared/hostports/choice.ts')).toContain(
      'layer-ports',
    );
    expect(broken('shared/hostports/choice.ts', 'shared/hostports/store.ts')).toEqual([
      'no-circular',
    ]);
  });

  it('refuses the domain importing the webhook, and the webhook the composition root', () => {
    expect(broken('shared/hostports/choice.ts', 'shared/admission/pods.ts')).toContain(
      'layer-domain',
    );
    expect(broken('shared/admission/pods.ts', 'shared/app/runtime.ts')).toContain('layer-passes');
  });

  it('lets entry points reach only the composition root', () => {
    expect(broken('functions/admission/handler.ts', 'shared/app/runtime.ts')).toEqual([]);
    expect(broken('functions/admission/handler.ts', 'shared/config/schema.ts')).toContain(
      'functions-through-composition',
    );
    expect(broken('cli/main.ts', 'shared/k8s/cluster-api.ts')).toContain('cli-through-composition');
  });

  it('keeps test/ out of the benchmarks and the simulator below them', () => {
    expect(broken('bench/hostports.ts', 'test/support/reviews.ts')).toContain(
      'no-test-from-product',
    );
    expect(broken('sim/world.ts', 'bench/hostports.ts')).toContain('layer-simulation');
  });

  it('finds every planted import circle, once each', () => {
    // dependency-cruiser names a circle at one of its edges, with the first rule that edge breaks.
    const circles = violations.filter((v) => v.rule === 'no-circular').map((v) => [v.from, v.to]);
    expect(circles).toEqual(
      expect.arrayContaining([
        ['shared/admission/pods.ts', 'shared/hostports/choice.ts'],
        ['shared/admission/pods.ts', 'shared/app/runtime.ts'],
        ['bench/hostports.ts', 'sim/world.ts'],
      ]),
    );
  });
});

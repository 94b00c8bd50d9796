/**
 * The berth stack built for a config in tests, layout only: `aws:cdk:bundling-stacks` is empty,
 * so no function is bundled (bundling.test.ts bundles for real).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { createBerthApp } from '../../infra/berth-app.js';

/** cdk-nag's findings on one synthesis. */
export interface ValidationReport {
  readonly pluginReports: readonly {
    readonly pluginName: string;
    readonly conclusion: string;
    readonly violations: readonly unknown[];
  }[];
}

/** The app and stack for `config` (berth.json, the only file it may read) under `context`. */
export function berthStackFor(config: object, context: Record<string, unknown> = {}) {
  return createBerthApp(
    { context: { config: 'berth.json', 'aws:cdk:bundling-stacks': [], ...context } },
    (path) => {
      if (path !== 'berth.json') throw new Error(`unexpected read of ${path}`);
      return JSON.stringify(config);
    },
  );
}

/** The stack for `config` synthesized: its template, cdk-nag's report and the template's file. */
export function synthStack(config: object, context: Record<string, unknown> = {}) {
  const { app, stack } = berthStackFor(config, context);
  const assembly = app.synth();
  return {
    stack,
    template: Template.fromStack(stack),
    report: JSON.parse(
      readFileSync(join(assembly.directory, 'validation-report.json'), 'utf8'),
    ) as ValidationReport,
    file: join(assembly.directory, stack.templateFile),
  };
}

/**
 * cfn-lint on a synthesized template; throws with its findings. W3005 is left out: CDK adds a
 * DependsOn on a role that a GetAtt already implies, harmless and not berth's.
 */
export function cfnLint(file: string): void {
  execFileSync('cfn-lint', ['--ignore-checks', 'W3005', '--', file], { encoding: 'utf8' });
}

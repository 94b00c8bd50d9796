/** Reading a berth function's role, policies and function out of a synthesized template. */
import type { Template } from 'aws-cdk-lib/assertions';

/** A resource as `Template.findResources` gives it. */
export type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** One IAM policy statement as synthesized. */
export interface PolicyStatement {
  Sid?: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** The one logical id of `type` starting with `prefix`; throws unless there is exactly one. */
function onlyId(template: Template, type: string, prefix: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  if (ids.length !== 1)
    throw new Error(`${ids.length} ${type} named ${prefix}…: ${ids.join(', ')}`);
  return ids[0] as string;
}

/** The logical id of one berth function's CfnFunction, e.g. `Admission` → `AdmissionFunction…`. */
export function functionId(template: Template, construct: string): string {
  return onlyId(template, 'AWS::Lambda::Function', `${construct}Function`);
}

/** The logical id of one berth function's role, e.g. `Admission` → `AdmissionRole…`. */
export function roleId(template: Template, construct: string): string {
  return onlyId(template, 'AWS::IAM::Role', `${construct}Role`);
}

/** Every statement of the policies attached to one function's role. */
export function statementsOf(template: Template, construct: string): PolicyStatement[] {
  const role = roleId(template, construct);
  return Object.values(template.findResources('AWS::IAM::Policy') as Resources)
    .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${role}"`))
    .flatMap(
      (policy) => (policy.Properties.PolicyDocument as { Statement: PolicyStatement[] }).Statement,
    );
}

/** The actions of some statements, in order. */
export const actionsOf = (statements: readonly PolicyStatement[]): string[] =>
  statements.flatMap((statement) => [statement.Action].flat());

import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderedJoin } from '../support/cloudformation.js';
import { cfnLint, synthStack, type ValidationReport } from '../support/synth.js';
import * as roles from '../support/template-roles.js';
import { actionsOf, type PolicyStatement, type Resources } from '../support/template-roles.js';

const MATCHMAKER = 'arn:aws:iam::111122223333:role/Matchmaker';
const LOBBY = 'arn:aws:iam::111122223333:role/teams/Lobby';
const STUDIO_ACCOUNT = '444455556666';

/** A stack with no capacity caller, and one with two roles by ARN and a role it makes. */
let plain: Template;
let granted: Template;
let grantedReport: ValidationReport;
let grantedFile: string;

beforeAll(() => {
  ({ template: plain } = synthStack({}, { cluster: 'games' }));
  ({
    template: granted,
    report: grantedReport,
    file: grantedFile,
  } = synthStack(
    {},
    {
      cluster: 'games',
      capacityCallers: `${MATCHMAKER},${LOBBY}`,
      capacityCallerAccount: STUDIO_ACCOUNT,
    },
  ));
}, 600_000);

/** The permissions on the capacity function that let a principal call its URL. */
function urlPermissions(template: Template) {
  const capacity = roles.functionId(template, 'Capacity');
  return Object.values(template.findResources('AWS::Lambda::Permission') as Resources)
    .map((permission) => permission.Properties)
    .filter((properties) => JSON.stringify(properties.FunctionName).includes(`"${capacity}"`));
}

/** Every policy statement in the template that names the capacity function. */
function statementsOnCapacity(template: Template): PolicyStatement[] {
  const capacity = roles.functionId(template, 'Capacity');
  return Object.values(template.findResources('AWS::IAM::Policy') as Resources)
    .flatMap(
      (policy) => (policy.Properties.PolicyDocument as { Statement: PolicyStatement[] }).Statement,
    )
    .filter((statement) => JSON.stringify(statement.Resource).includes(`"${capacity}"`));
}

/** BERTH_CAPACITY_CALLERS as the function reads it, each role's GetAtt as `<logical id>.Arn`. */
const callersOf = (template: Template): unknown => {
  const fn =
    template.findResources('AWS::Lambda::Function')[roles.functionId(template, 'Capacity')];
  const render = (part: unknown): string => {
    const getAtt = (part as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
    return getAtt ? getAtt.join('.') : renderedJoin(part);
  };
  const value = fn?.Properties.Environment.Variables.BERTH_CAPACITY_CALLERS as
    | string
    | { 'Fn::Join': [string, unknown[]] };
  return JSON.parse(
    typeof value === 'string' ? value : value['Fn::Join'][1].map(render).join(value['Fn::Join'][0]),
  );
};

describe('the capacity API in the stack', { timeout: 120_000 }, () => {
  it('passes cdk-nag and cfn-lint with roles granted and a matchmaker role made', () => {
    expect(grantedReport.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    expect(() => cfnLint(grantedFile)).not.toThrow();
  });

  it('serves it from a function URL that takes SigV4 only', () => {
    for (const template of [plain, granted]) {
      template.hasResourceProperties('AWS::Lambda::Url', {
        AuthType: 'AWS_IAM',
        TargetFunctionArn: { 'Fn::GetAtt': [roles.functionId(template, 'Capacity'), 'Arn'] },
      });
    }
  });

  it('lets nobody call it unless asked', () => {
    expect(urlPermissions(plain)).toEqual([]);
    expect(statementsOnCapacity(plain)).toEqual([]);
    expect(callersOf(plain)).toEqual([]);
    expect(Object.keys(plain.findResources('AWS::IAM::Role'))).not.toContainEqual(
      expect.stringMatching(/^MatchmakerRole/),
    );
    expect(Object.keys(plain.findOutputs('*'))).not.toContain('MatchmakerRoleArn');
  });

  it('grants the URL to each role of -c capacityCallers by a permission, and to no one else', () => {
    const permissions = urlPermissions(granted);
    const urlCalls = permissions.filter((p) => p.Action === 'lambda:InvokeFunctionUrl');
    expect(urlCalls).toEqual(
      [MATCHMAKER, LOBBY].map((principal) =>
        expect.objectContaining({ Principal: principal, FunctionUrlAuthType: 'AWS_IAM' }),
      ),
    );
    // The invoke a function URL needs besides, for the URL's calls only.
    const invokes = permissions.filter((p) => p.Action === 'lambda:InvokeFunction');
    expect(invokes).toEqual(
      [MATCHMAKER, LOBBY].map((principal) =>
        expect.objectContaining({ Principal: principal, InvokedViaFunctionUrl: true }),
      ),
    );
    expect(permissions).toHaveLength(4);
    expect(permissions.map((p) => p.Principal)).not.toContain('*');
  });

  it('makes a role the matchmaker account may assume, grants it the URL and outputs its ARN', () => {
    const [id, ...others] = Object.keys(granted.findResources('AWS::IAM::Role')).filter((name) =>
      name.startsWith('MatchmakerRole'),
    );
    expect(others).toEqual([]);
    const role = granted.findResources('AWS::IAM::Role')[id as string];
    expect(role?.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: {
          AWS: {
            'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::${STUDIO_ACCOUNT}:root`]],
          },
        },
      },
    ]);
    // The role's own policy grants the URL: the only statement in the stack that does.
    const capacity = { 'Fn::GetAtt': [roles.functionId(granted, 'Capacity'), 'Arn'] };
    expect(statementsOnCapacity(granted)).toEqual([
      {
        Action: 'lambda:InvokeFunctionUrl',
        Condition: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } },
        Effect: 'Allow',
        Resource: capacity,
      },
      {
        Action: 'lambda:InvokeFunction',
        Condition: { Bool: { 'lambda:InvokedViaFunctionUrl': true } },
        Effect: 'Allow',
        Resource: capacity,
      },
    ]);
    const matchmakerPolicy = Object.values(
      granted.findResources('AWS::IAM::Policy') as Resources,
    ).filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${id}"`));
    expect(matchmakerPolicy).toHaveLength(1);
    expect(granted.findOutputs('*').MatchmakerRoleArn?.Value).toEqual({
      'Fn::GetAtt': [id, 'Arn'],
    });
  });

  it('tells the function every granted role, the one it made among them', () => {
    const id = Object.keys(granted.findResources('AWS::IAM::Role')).find((name) =>
      name.startsWith('MatchmakerRole'),
    );
    expect(callersOf(granted)).toEqual([MATCHMAKER, LOBBY, `${id}.Arn`]);
  });

  it('outputs the capacity URL', () => {
    expect(granted.findOutputs('*').CapacityUrl?.Value).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^CapacityFunctionFunctionUrl/), 'FunctionUrl'],
    });
  });

  it('lets the function read table items by key and nothing more: no write, no scan, no cluster', () => {
    const statements = roles.statementsOf(granted, 'Capacity');
    const dynamo = statements.filter((statement) =>
      [statement.Action].flat().some((action) => action.startsWith('dynamodb:')),
    );
    expect(dynamo).toEqual([
      expect.objectContaining({
        Action: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^Table/), 'Arn'] },
      }),
    ]);
    const actions = actionsOf(statements);
    for (const write of [
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:Scan',
      'dynamodb:Query',
    ]) {
      expect(actions).not.toContain(write);
    }
    expect(actions.filter((action) => action.startsWith('eks:'))).toEqual([]);
    const capacityRole = roles.roleId(granted, 'Capacity');
    const entries = Object.values(granted.findResources('AWS::EKS::AccessEntry') as Resources);
    expect(entries.map((entry) => JSON.stringify(entry.Properties.PrincipalArn))).not.toContain(
      JSON.stringify({ 'Fn::GetAtt': [capacityRole, 'Arn'] }),
    );
  });

  it('lets the scale pass read the capacity records back with BatchGetItem', () => {
    const dynamo = roles
      .statementsOf(plain, 'Scale')
      .filter((statement) => [statement.Action].flat().includes('dynamodb:BatchGetItem'));
    expect(dynamo).toEqual([
      expect.objectContaining({
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^Table/), 'Arn'] },
      }),
    ]);
  });
});

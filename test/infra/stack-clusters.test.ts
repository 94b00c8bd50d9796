import { beforeAll, describe, expect, it } from 'vitest';
import { BERTH_TAGS } from '../../shared/ec2/network.js';
import { renderedJoin } from '../support/cloudformation.js';
import { berthStackFor, cfnLint, synthStack } from '../support/synth.js';

/** Two clusters with their own node pools and scale intervals, one shared key. */
const CONFIG = {
  repair: { intervalSeconds: 300 },
  clusters: {
    'games-a': { scale: { nodePool: { type: 'eks-nodegroup', name: 'a-nodes' } } },
    'games-b': {
      scale: { intervalSeconds: 120, nodePool: { type: 'asg', name: 'b-asg' } },
      serviceCIDRs: ['10.200.0.0/16'],
    },
  },
};

const NODE_ROLE_A = 'arn:aws:iam::111122223333:role/games-a-nodes';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

let built: ReturnType<typeof synthStack>;
let resources: Resources;

beforeAll(() => {
  built = synthStack(CONFIG, {
    clusters: 'games-a,games-b',
    nodeIpsCallers: `games-a=${NODE_ROLE_A}`,
  });
  resources = built.template.toJSON().Resources as Resources;
}, 600_000);

const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

/** The properties of the one resource of `type` whose logical id starts with `prefix`. */
function propertiesOf(type: string, prefix: string): Record<string, unknown> {
  const found = ofType(type).find(([id]) => id.startsWith(prefix));
  if (!found) throw new Error(`no ${type} ${prefix}…`);
  return found[1].Properties;
}

describe('one stack for several clusters', { timeout: 300_000 }, () => {
  it('is one stack named berth (or -c stack) with one table and one set of functions', () => {
    expect(built.stack.stackName).toBe('berth');
    expect(ofType('AWS::DynamoDB::GlobalTable')).toHaveLength(1);
    expect(ofType('AWS::Lambda::Function')).toHaveLength(7);
    expect(ofType('AWS::CloudWatch::Dashboard')).toHaveLength(1);
    const named = berthStackFor(CONFIG, { clusters: 'games-a,games-b', stack: 'berth-eu' });
    expect(named.stack.stackName).toBe('berth-eu');
  });

  it('passes cdk-nag and cfn-lint', () => {
    expect(built.report.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    expect(() => cfnLint(built.file)).not.toThrow();
  });

  it('gives each cluster its own webhook secret, all read by the admission function', () => {
    const secrets = ofType('AWS::SecretsManager::Secret').map(([id]) => id);
    expect(secrets).toHaveLength(2);
    const admission = propertiesOf('AWS::Lambda::Function', 'Admission');
    const variables = (admission.Environment as { Variables: Record<string, unknown> }).Variables;
    const byCluster = JSON.parse(renderedJoin(variables.BERTH_WEBHOOK_SECRETS));
    expect(Object.keys(byCluster)).toEqual(['games-a', 'games-b']);
    expect(byCluster['games-a']).toMatch(/^Clustergamesa/);
    expect(byCluster['games-b']).toMatch(/^Clustergamesb/);
    expect(new Set(Object.values(byCluster))).toEqual(new Set(secrets));
    // Every function gets the config with both sections.
    expect(JSON.parse(String(variables.BERTH_CONFIG))).toEqual(CONFIG);
  });

  it("runs every pass per cluster, on that cluster's interval, naming it in the input", () => {
    const schedules = ofType('AWS::Scheduler::Schedule').map(([, r]) => {
      const target = r.Properties.Target as { Input: string };
      const input = JSON.parse(target.Input);
      return `${input.cluster} ${input.pass} ${r.Properties.ScheduleExpression}`;
    });
    expect(schedules.sort()).toEqual([
      'games-a eni rate(1 minute)',
      'games-a repair rate(5 minutes)',
      'games-a scale rate(1 minute)',
      'games-b eni rate(1 minute)',
      'games-b repair rate(5 minutes)',
      'games-b scale rate(2 minutes)',
    ]);
  });

  it('enters every function role into each cluster, and scales each one its own pool', () => {
    const entries = ofType('AWS::EKS::AccessEntry').map(([, r]) => r.Properties.ClusterName);
    expect(entries.filter((name) => name === 'games-a')).toHaveLength(6);
    expect(entries.filter((name) => name === 'games-b')).toHaveLength(6);
    const policies = ofType('AWS::IAM::Policy');
    const policyOf = (prefix: string) =>
      JSON.stringify(policies.filter(([id]) => id.startsWith(prefix)).map(([, r]) => r));
    expect(policyOf('Clustergamesa')).toContain('nodegroup/games-a/a-nodes/*');
    expect(policyOf('Clustergamesa')).not.toContain('b-asg');
    expect(policyOf('Clustergamesb')).toContain('autoScalingGroupName/b-asg');
    expect(policyOf('Clustergamesb')).toContain('autoscaling:SetDesiredCapacity');
  });

  it('lets every function describe each of the clusters, and no other', () => {
    const functionPolicies = ofType('AWS::IAM::Policy').filter(([id]) =>
      /^(Admission|Settle|Repair|Scale|Eni|NodeIps)Role/.test(id),
    );
    expect(functionPolicies).toHaveLength(6);
    for (const [id, policy] of functionPolicies) {
      const statements = (
        policy.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }
      ).Statement;
      const describe = statements.find((statement) => statement.Action === 'eks:DescribeCluster');
      const clusters = JSON.stringify(describe?.Resource).match(/:cluster\/[\w-]+/g);
      expect({ id, clusters }).toEqual({ id, clusters: [':cluster/games-a', ':cluster/games-b'] });
    }
  });

  it('grants the node roles the node IP URL and tells the function which cluster each may reach', () => {
    const nodeIps = propertiesOf('AWS::Lambda::Function', 'NodeIps');
    const variables = (nodeIps.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(JSON.parse(String(variables.BERTH_NODE_IPS_CALLERS))).toEqual({
      'games-a': [NODE_ROLE_A],
    });
    built.template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunctionUrl',
      Principal: NODE_ROLE_A,
    });
  });

  it("lets the ENI functions manage the berth ENIs of the stack's clusters only", () => {
    const eniPolicy = propertiesOf('AWS::IAM::Policy', 'EniRole');
    const statements = (
      eniPolicy.PolicyDocument as { Statement: { Sid?: string; Condition?: unknown }[] }
    ).Statement;
    const manage = statements.find((statement) => statement.Sid === 'ManageOwnEni');
    expect(manage?.Condition).toEqual({
      StringEquals: { [`aws:ResourceTag/${BERTH_TAGS.cluster}`]: ['games-a', 'games-b'] },
    });
  });

  it("alarms per cluster on berth's metrics and once on the shared functions", () => {
    const alarms = ofType('AWS::CloudWatch::Alarm');
    const named = (part: string) => alarms.filter(([id]) => id.includes(part));
    const rangeAlarms = named('RangeNearlyFull').map(([, r]) => {
      const dimensions = r.Properties.Dimensions as { Name: string; Value: string }[];
      const cluster = dimensions.find((d) => d.Name === 'cluster')?.Value;
      const range = dimensions.find((d) => d.Name === 'range')?.Value;
      return `${cluster} ${range} | ${r.Properties.AlarmDescription}`;
    });
    // One alarm metric a cluster: its fullest range's use.
    expect(rangeAlarms.sort()).toEqual([
      'games-a undefined | berth (games-a): a range (10.100.0.0/16, 30000-32767) is over 90% used',
      'games-b undefined | berth (games-b): a range (10.200.0.0/16, 30000-32767) is over 90% used',
    ]);
    // The webhook's 5XX answers, every cluster's, alarm once for the stack.
    expect(named('AdmissionErrors')).toHaveLength(1);
    expect(named('AdmissionInternalErrors')).toHaveLength(0);
    expect(named('NodeIpsInternalErrors')).toHaveLength(2);
    expect(named('DeadLetters')).toHaveLength(1);
  });

  it("outputs the function URL and each cluster's secret for berth manifests", () => {
    const outputs = built.template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining(['WebhookUrl', 'WebhookSecretArns', 'NodeIpsUrl', 'TableName']),
    );
    expect(Object.keys(outputs)).not.toContain('WebhookSecretArn');
    // Each cluster claimed by an export: a second stack claiming one fails to deploy.
    const claims = Object.values(
      built.template.toJSON().Outputs as Record<string, { Export?: { Name: string } }>,
    ).flatMap((output) => (output.Export ? [output.Export.Name] : []));
    expect(claims.sort()).toEqual(['berth-cluster-games-a', 'berth-cluster-games-b']);
    expect(Object.keys(JSON.parse(renderedJoin(outputs.WebhookSecretArns?.Value)))).toEqual([
      'games-a',
      'games-b',
    ]);
  });

  it("adds a cluster without changing any of another cluster's resources", () => {
    const alone = synthStack(
      { repair: CONFIG.repair, clusters: { 'games-a': CONFIG.clusters['games-a'] } },
      { clusters: 'games-a' },
    ).template.toJSON().Resources as Resources;
    const own = Object.entries(alone).filter(
      ([id]) => id.startsWith('Clustergamesa') || id.startsWith('MonitoringClustergamesa'),
    );
    expect(own.filter(([id]) => id.startsWith('Monitoring')).length).toBeGreaterThan(3);
    expect(own.length).toBeGreaterThan(20);
    for (const [id, resource] of own) expect(resources[id]).toEqual(resource);
  });
});

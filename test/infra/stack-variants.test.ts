import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { synthStack } from '../support/synth.js';

const NODE_ROLE = 'arn:aws:iam::111122223333:role/game-nodes';

/** The stack of the one cluster `games` for a config, synthesized (layout only). */
const synth = (config: object, context: Record<string, unknown> = {}) =>
  synthStack(config, { cluster: 'games', ...context });

// Synthesis with cdk-nag takes seconds even without bundling; more when it shares the cores.
describe('BerthStack variants', { timeout: 120_000 }, () => {
  it('scales an Auto Scaling group by name and passes cdk-nag with its findings acknowledged', () => {
    const { template, report } = synth({ scale: { nodePool: { type: 'asg', name: 'game-asg' } } });
    expect(report.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).toContain(':autoScalingGroup:*:autoScalingGroupName/game-asg');
    expect(policies).toContain('autoscaling:SetDesiredCapacity');
  });

  it('traces every function actively with -c tracing=all', () => {
    const { template } = synth({}, { tracing: 'all' });
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions.map((fn) => fn.Properties.TracingConfig)).toEqual(
      Array(7).fill({ Mode: 'Active' }),
    );
  });

  it('traces the passes actively with -c tracing=passes, the request functions passing through', () => {
    const { template } = synth({}, { tracing: 'passes' });
    const modes = Object.values(template.findResources('AWS::Lambda::Function')).map(
      (fn) => (fn.Properties.TracingConfig as { Mode: string }).Mode,
    );
    expect(modes.filter((mode) => mode === 'Active')).toHaveLength(4);
    // The webhook, the node IP API and the capacity API.
    expect(modes.filter((mode) => mode === 'PassThrough')).toHaveLength(3);
  });

  it('encrypts the alarm topic with a rotated key CloudWatch may use with -c alarmTopicKey=true', () => {
    const { template, report } = synth({}, { alarmTopicKey: 'true' });
    expect(report.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    template.hasResourceProperties('AWS::SNS::Topic', {
      KmsMasterKeyId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^MonitoringAlarmTopicKey'), 'Arn'] },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          }),
        ]),
      },
    });
    expect(JSON.stringify(template.toJSON())).not.toContain('AwsSolutions-SNS2');
  });

  it('gives a Karpenter pool no AWS scaling permission', () => {
    const { template } = synth({ scale: { nodePool: { type: 'karpenter', name: 'games' } } });
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).not.toContain('autoscaling:');
    expect(policies).not.toContain('Nodegroup');
  });

  it('runs every function in the given private subnets with VPC endpoints for the APIs it calls', () => {
    const { template, report } = synth(
      {},
      { vpc: 'vpc-0abc1234', subnets: 'subnet-0aaa1111,subnet-0bbb2222' },
    );
    expect(report.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(7);
    for (const fn of functions) {
      expect(fn.Properties.VpcConfig.SubnetIds).toEqual(['subnet-0aaa1111', 'subnet-0bbb2222']);
      expect(fn.Properties.VpcConfig.SecurityGroupIds).toHaveLength(1);
    }
    const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint')).map((e) =>
      JSON.stringify(e.Properties.ServiceName),
    );
    for (const service of [
      'dynamodb',
      'sqs',
      'secretsmanager',
      'eks',
      'ec2',
      'lambda',
      'autoscaling',
    ])
      expect(endpoints.some((name) => name.includes(`.${service}"`))).toBe(true);
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      SecurityGroupEgress: [{ CidrIp: '0.0.0.0/0', FromPort: 443, ToPort: 443, IpProtocol: 'tcp' }],
    });

    const bare = synth(
      {},
      { vpc: 'vpc-0abc1234', subnets: 'subnet-0aaa1111', vpcEndpoints: 'false' },
    );
    bare.template.resourceCountIs('AWS::EC2::VPCEndpoint', 0);
  });

  it('leaves out the schedule of a pass whose interval is 0', () => {
    const { template } = synth({ repair: { intervalSeconds: 0 } });
    template.resourceCountIs('AWS::Scheduler::Schedule', 2);
  });

  it('lets the configured node roles call the ENI IP API with SigV4', () => {
    const { template, report } = synth({}, { nodeIpsCallers: NODE_ROLE });
    expect(report.pluginReports.map((plugin) => plugin.violations)).toEqual([[]]);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunctionUrl',
      Principal: NODE_ROLE,
      FunctionUrlAuthType: 'AWS_IAM',
    });
  });
});

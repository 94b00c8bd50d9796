/**
 * The CDK app: one berth stack for the cluster or clusters in the context, checked by cdk-nag's AwsSolutions
 * pack (a violation that is not acknowledged with a reason fails synthesis).
 */
import { Annotations, App, type AppProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BerthStack } from './berth-stack.js';
import { type StackContext, stackSettings } from './settings.js';

/** The app and its one stack. */
export interface BerthApp {
  readonly app: App;
  readonly stack: BerthStack;
}

/**
 * Builds the app. Context comes from the CDK CLI (`-c cluster=NAME -c config=FILE`, or
 * `-c clusters=NAME,NAME [-c stack=NAME]`) or, in tests, from `props.context`; `readText` reads
 * the config file.
 */
export function createBerthApp(
  props: AppProps = {},
  readText?: (path: string) => string,
): BerthApp {
  const app = new App(props);
  const context: StackContext = {
    cluster: app.node.tryGetContext('cluster'),
    clusters: app.node.tryGetContext('clusters'),
    stack: app.node.tryGetContext('stack'),
    config: app.node.tryGetContext('config'),
    nodeIpsCallers: app.node.tryGetContext('nodeIpsCallers'),
    capacityCallers: app.node.tryGetContext('capacityCallers'),
    capacityCallerAccount: app.node.tryGetContext('capacityCallerAccount'),
    admissionConcurrency: app.node.tryGetContext('admissionConcurrency'),
    tracing: app.node.tryGetContext('tracing'),
    alarmTopicKey: app.node.tryGetContext('alarmTopicKey'),
    vpc: app.node.tryGetContext('vpc'),
    subnets: app.node.tryGetContext('subnets'),
    vpcEndpoints: app.node.tryGetContext('vpcEndpoints'),
    accelerator: app.node.tryGetContext('accelerator'),
    acceleratorSubnets: app.node.tryGetContext('acceleratorSubnets'),
    acceleratorPorts: app.node.tryGetContext('acceleratorPorts'),
  };
  const settings = stackSettings(context, readText);
  const clusters = settings.configs.map((config) => config.cluster);
  const stack = new BerthStack(app, settings.stackName, {
    settings,
    description: `berth for EKS cluster${clusters.length > 1 ? 's' : ''} ${clusters.join(', ')}: admission webhook, allocation table, passes`,
  });
  // No cluster named anywhere: the config's default ("local") names no EKS cluster to serve.
  if (context.cluster === undefined && context.clusters === undefined && clusters[0] === 'local') {
    Annotations.of(stack).addWarningV2(
      'berth:no-cluster',
      'no cluster named: this stack serves an EKS cluster called "local"; pass -c cluster=NAME (the EKS cluster), -c clusters=NAME,NAME, or a config (-c config=FILE) whose "cluster" names it',
    );
  }
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}

/**
 * `berth fronts`: one fronts pass against the cluster kubectl would use, with the binds it
 * queues made before the command ends; or `--add-nlb ARN`, which adds a load balancer to the
 * cluster's pool (checked first: it must be a Network Load Balancer ELBv2 knows).
 */
import { frontsWiring, sdkFrontsAccount } from '../shared/app/fronts.js';
import type { FrontQueue, FrontWork } from '../shared/fronts/work.js';
import { handleFrontWork } from '../shared/fronts/worker.js';
import { openStore } from '../shared/local/store-target.js';
import type { Command } from './commands.js';
import { requiredCluster } from './local-cluster.js';
import { UsageError } from './main.js';

const NLB_ARN = /^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:loadbalancer\/net\/\S+$/;

/** A queue that keeps what the pass hands it, for the command to do before it ends. */
class CollectedWork implements FrontQueue {
  readonly items: FrontWork[] = [];
  async submit(work: FrontWork): Promise<void> {
    this.items.push(work);
  }
}

/** The command. */
export const frontsCommand: Command = async (options) => {
  const { config } = options;
  if (config.fronts.nlb === undefined && config.fronts.accelerator === undefined) {
    throw new UsageError(
      `fronts: cluster ${config.cluster} has no fronts in its config; set fronts.nlb or fronts.accelerator`,
    );
  }
  if (options.addNlb !== undefined && !NLB_ARN.test(options.addNlb)) {
    throw new UsageError(
      `--add-nlb: "${options.addNlb}" is not a Network Load Balancer ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/net/NAME/ID)`,
    );
  }
  if (options.addNlb === undefined && !options.once) {
    throw new UsageError('fronts runs one pass: add --once (or --add-nlb ARN)');
  }
  const store = await openStore(options);
  try {
    const queue = new CollectedWork();
    const account = sdkFrontsAccount(options.region);
    const wiring = frontsWiring(
      {
        config,
        dynamo: store.client,
        tableName: store.tableName,
        ...(options.region ? { region: options.region } : {}),
      },
      { account, queue },
    );
    if (wiring === undefined) return 2;
    if (options.addNlb !== undefined) {
      // ELBv2 must know it, as a network load balancer: a typo never joins the pool.
      await account.elbv2.describeLoadBalancers([options.addNlb]);
      await wiring.store.addToPool(options.addNlb);
      process.stdout.write(`${JSON.stringify({ added: options.addNlb })}\n`);
      return 0;
    }
    const clusterApi = requiredCluster(options).api;
    const summary = await wiring.pass(clusterApi);
    const outcomes = await handleFrontWork(wiring.worker(clusterApi), queue.items);
    const bindsFailed = outcomes.filter((outcome) => outcome.kind === 'failed').length;
    process.stdout.write(
      `${JSON.stringify({ ...summary, binds: queue.items.length, bindsFailed }, null, 2)}\n`,
    );
    return summary.failed + bindsFailed > 0 ? 1 : 0;
  } finally {
    await store.close();
  }
};

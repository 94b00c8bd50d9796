/**
 * `berth fronts`: one fronts pass against the cluster kubectl would use, with the binds it
 * queues made before the command ends; or `--add-nlb ARN`, which adds a load balancer to the
 * cluster's pool (checked first: it must be a Network Load Balancer ELBv2 knows).
 */
import { localFronts } from '../shared/app/local-commands.js';
import { UsageError } from '../shared/app/local-errors.js';
import type { Command } from './options.js';

const NLB_ARN = /^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:loadbalancer\/net\/\S+$/;

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
  const done = await localFronts(options, options.addNlb);
  if (done === undefined) return 2;
  if ('added' in done) {
    process.stdout.write(`${JSON.stringify(done)}\n`);
    return 0;
  }
  process.stdout.write(`${JSON.stringify(done.pass, null, 2)}\n`);
  return done.pass.failed + done.pass.bindsFailed > 0 ? 1 : 0;
};

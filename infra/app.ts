/** `cdk.json`'s app: `npx cdk synth`, `npx cdk deploy -c cluster=NAME [-c config=berth.json]`. */
import { ConfigError } from '../shared/config/errors.js';
import { createBerthApp } from './berth-app.js';

try {
  createBerthApp().app.synth();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  // One line per problem, as `berth` prints them; the CDK CLI then reports the failed synth.
  process.stderr.write(`berth: invalid stack configuration:\n${error.problems.join('\n')}\n`);
  process.exitCode = 2;
}

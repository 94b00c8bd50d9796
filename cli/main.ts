/**
 * The `berth` command line. Every command runs the same runtime as the Lambdas; only the
 * adapters' endpoints differ. Parsing loads nothing but commander: a command's dependencies (the
 * AWS SDK, the Kubernetes client, DynamoDB Local) are imported after its flags were checked, so
 * `--help` and a usage error answer at once.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { exitCodeOf, failureText, UsageError } from '../shared/app/local-errors.js';
import type { LocalEnvironment, LocalOptions, LocalSetup } from '../shared/app/local-options.js';
import { SCENARIOS } from '../sim/game-day.js';
import type { CliOptions } from './options.js';

type Flags = Record<string, string | boolean | undefined>;

/** `--new-ca` says what it costs: the local CA is otherwise kept, its certificates issued again. */
const NEW_CA_HELP =
  'make a new local CA under --data-dir (every caBundle already applied stops matching: apply berth manifests --local again)';

/** berth's version, as package.json (the one file that states it) says. */
export const BERTH_VERSION: string = (
  createRequire(import.meta.url)('../package.json') as { version: string }
).version;

/** A flag's value that must be an http(s) URL. */
const httpUrl =
  (flag: string) =>
  (value: string): string => {
    if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
      throw new UsageError(
        `${flag}: "${value}" is not an http(s) URL such as http://127.0.0.1:8000`,
      );
    }
    return value;
  };

const port = (value: string): string => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new UsageError(`--port: "${value}" is not a port number (0-65535)`);
  }
  return value;
};

function program(run: (command: string, flags: Flags) => Promise<void>): Command {
  const root = new Command('berth')
    .description(
      'Serverless network plumbing for game-server fleets: the local server, the passes, and the manifests a cluster needs.',
    )
    .option('--config <file>', 'JSON config file (default: every key at its default)')
    .option('--data-dir <dir>', "DynamoDB Local's files and the TLS material", '.berth')
    .addOption(
      new Option(
        '--dynamodb-endpoint <url>',
        'use this DynamoDB endpoint instead of DynamoDB Local',
      ).argParser(httpUrl('--dynamodb-endpoint')),
    )
    .option(
      '--table <name>',
      'use this table (with normal AWS credentials unless an endpoint is given)',
    )
    .option('--kubeconfig <path>', 'the cluster to read (default: KUBECONFIG, then ~/.kube/config)')
    .option(
      '--context <name>',
      "the kubeconfig context (default: the file's current-context); with a section per cluster, CLUSTER=CONTEXT,… (default: the context named like each cluster)",
    )
    .option(
      '--cluster <name>',
      'with a config that has a section per cluster: the cluster the command is for',
    )
    .option('--region <region>', 'AWS Region for EC2, node groups and stacks')
    .option('--profile <name>', 'AWS shared-config profile')
    .version(BERTH_VERSION, '-V, --version', "print berth's version")
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  const action = (name: string) => (_: unknown, command: Command) =>
    run(name, command.optsWithGlobals() as Flags);
  root
    .command('serve')
    .description(
      'the local server: DynamoDB Local, the webhook and the APIs; with a cluster it reads bindings and settles released values',
    )
    .option('--http', 'plain HTTP on loopback instead of HTTPS')
    .addOption(new Option('--port <n>', 'port to listen on').default('8443').argParser(port))
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option(
      '--advertise-address <address>',
      'address the cluster reaches this server at (added to the certificate; kind, minikube)',
    )
    .option('--new-ca', NEW_CA_HELP)
    .option(
      '--passes',
      'also run the repair, scale and ENI passes on timers (they change the cluster)',
    )
    .action(action('serve'));
  const positive = (flag: string, integer: boolean) => (value: string) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
      throw new UsageError(
        `${flag}: "${value}" is not a ${integer ? 'whole number' : 'number'} above 0`,
      );
    }
    return value;
  };
  root
    .command('sim')
    .description(
      'a simulated game day through the real server: DynamoDB Local, the webhook, the node IP API and the web view (/ui) over a simulated cluster and EC2 account, with the repair, ENI and scale passes, invariants checked as it runs',
    )
    .addOption(
      new Option('--hours <n>', 'day length').default('1').argParser(positive('--hours', false)),
    )
    .addOption(
      new Option('--speed <n>', 'day seconds per wall second (600: an hour in 6 s)')
        .default('60')
        .argParser(positive('--speed', false)),
    )
    .addOption(
      new Option('--seed <n>', 'replays the same day')
        .default('1')
        .argParser(positive('--seed', true)),
    )
    .addOption(
      new Option('--nodes <n>', 'game nodes (16 CPUs each)')
        .default('20')
        .argParser(positive('--nodes', true)),
    )
    .addOption(
      new Option('--sessions-per-minute <n>', 'game sessions started a minute, on average')
        .default('20')
        .argParser(positive('--sessions-per-minute', false)),
    )
    .addOption(
      new Option(
        '--scenario <name>',
        'steady, matchmaking waves every quarter hour, a steady day whose fullest node fails, one whose subnet runs dry for a while, or an Agones fleet with a Ready buffer',
      )
        .choices([...SCENARIOS])
        .default('waves'),
    )
    .addOption(
      new Option('--port <n>', 'port of the web view and webhook').default('8443').argParser(port),
    )
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--no-scale', "keep the fleet as made: berth's scale pass does not run")
    .option('--json', 'print the report as JSON')
    .action(action('sim'));
  root
    .command('status')
    .description('usage of every range and pool')
    .option('--json', 'print JSON (the /v1/status document)')
    .option(
      '--holder <value>',
      'who holds a cluster IP, a node port or a host port, or what namespace/name holds',
    )
    .option(
      '--clusters',
      "every cluster's free capacity as its passes last recorded it (the GET /v1/capacity view)",
    )
    .action(action('status'));
  root
    .command('repair')
    .description('one repair pass against the cluster; prints a JSON summary')
    .option('--once', 'run one pass (required: serve --passes runs them on timers)')
    .option('--verbose', 'also list each finding and each leak countdown on stderr')
    .action(action('repair'));
  root
    .command('scale')
    .description('one node scale pass; prints the plan and actions as JSON')
    .option('--once', 'run one pass (required)')
    .option('--dry-run', 'print the plan only; change nothing')
    .action(action('scale'));
  root
    .command('eni')
    .description('one ENI pool maintenance and GC pass')
    .option('--once', 'run one pass (required)')
    .action(action('eni'));
  root
    .command('fronts')
    .description(
      'one fronts pass (NLB listeners and Global Accelerator destinations of game servers); prints a JSON summary',
    )
    .option('--once', 'run one pass (required unless --add-nlb)')
    .option(
      '--add-nlb <arn>',
      "add a Network Load Balancer to the cluster's pool, beside fronts.nlb.loadBalancers",
    )
    .action(action('fronts'));
  root
    .command('forget-cluster')
    .description(
      "lists every item a cluster owns in the table; with --yes deletes them (the other clusters' items, and the shared EC2 budget and subnet marks, stay)",
    )
    .argument('<cluster>', 'the cluster name (its config `cluster`)')
    .option('--yes', 'delete the items listed (without it: a dry run)')
    .option('--json', 'print the summary as JSON')
    .action((cluster: string, _: unknown, command: Command) =>
      run('forget-cluster', { ...(command.optsWithGlobals() as Flags), forget: cluster }),
    );
  root
    .command('manifests')
    .description(
      'the MutatingWebhookConfiguration and RBAC for one target: --stack, --url or --local',
    )
    .option('--stack <name>', 'a deployed berth stack (reads its outputs and secret)')
    .option('--url <url>', 'any HTTPS webhook endpoint')
    .option('--ca-file <file>', 'CA that signed --url (default: public roots)')
    .option(
      '--local',
      'the local server (https://127.0.0.1:8443, or --advertise-address: a cluster cannot reach 127.0.0.1)',
    )
    .option('--advertise-address <address>', 'address the cluster reaches the local server at')
    .option('--new-ca', NEW_CA_HELP)
    .addOption(new Option('--port <n>', 'port of the local server').default('8443').argParser(port))
    .option(
      '--http',
      'with --local --cni: the local server serves plain HTTP (berth serve --http); the webhook needs HTTPS',
    )
    .option('--json', 'print JSON instead of YAML')
    .option(
      '--cni',
      "berth-cni's DaemonSet instead: the node IP API of --stack, of --url, or of --local (over HTTPS trusting the local CA, or --http)",
    )
    .option('--cni-nodes <selector>', 'nodes that run berth-cni (default: scale.nodeSelector)')
    .option(
      '--fail-open <webhooks>',
      'pods: game servers are admitted without berth while it does not answer (Services stay Fail); apply the plain manifests to take it back',
    )
    .option(
      '--delete',
      'print what kubectl delete -f - needs to remove berth from the cluster, the webhook configuration first',
    )
    .action(action('manifests'));
  return root;
}

/** Commands that act on every cluster of the config when none is chosen. */
const EVERY_CLUSTER: ReadonlySet<string> = new Set(['status', 'forget-cluster', 'serve']);

/** The config `--cluster` names, or the only one; a command for one cluster must be told which. */
function chosenCluster(
  command: string,
  clusters: LocalSetup['clusters'],
  wanted: string | undefined,
): LocalOptions['config'] {
  const names = clusters.map((config) => config.cluster);
  if (wanted !== undefined) {
    const found = clusters.find((config) => config.cluster === wanted);
    if (!found) {
      throw new UsageError(
        `--cluster: "${wanted}" is not in the config (its clusters: ${names.join(', ')})`,
      );
    }
    return found;
  }
  const [first] = clusters;
  if (!first) throw new UsageError('the config names no cluster');
  if (clusters.length > 1 && !EVERY_CLUSTER.has(command)) {
    throw new UsageError(
      `${command}: the config has clusters ${names.join(', ')}; pick one with --cluster NAME`,
    );
  }
  return first;
}

/** Reads the config and the environment, and turns commander's flags into `CliOptions`. */
async function optionsOf(
  command: string,
  flags: Flags,
  env: LocalEnvironment | undefined,
): Promise<CliOptions> {
  const text = (key: string) =>
    typeof flags[key] === 'string' ? (flags[key] as string) : undefined;
  const on = (key: string) => flags[key] === true;
  const optional = (entries: Record<string, string | undefined>) =>
    Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));
  const configFile = text('config');
  // The environment is read, and the config file too, only once a command runs.
  const { localSetup } = await import('../shared/app/local-options.js');
  const setup = await localSetup(
    optional({ configFile, region: text('region'), profile: text('profile') }),
    env,
  );
  const { clusters } = setup;
  const config = chosenCluster(command, clusters, text('cluster'));
  return {
    command,
    config,
    // A chosen cluster is the only one the command sees.
    clusters: text('cluster') === undefined ? clusters : [config],
    configuredClusters: clusters.map((cluster) => cluster.cluster),
    dataDir: text('dataDir') ?? '.berth',
    ...optional({
      configFile,
      dynamodbEndpoint: text('dynamodbEndpoint'),
      table: text('table'),
      kubeconfig: text('kubeconfig'),
      kubeconfigEnv: setup.kubeconfigEnv,
      context: text('context'),
      region: setup.region,
      profile: text('profile'),
      advertiseAddress: text('advertiseAddress'),
      url: text('url'),
      stack: text('stack'),
      caFile: text('caFile'),
      cniNodes: text('cniNodes'),
      failOpen: text('failOpen'),
      holder: text('holder'),
      addNlb: text('addNlb'),
      forget: text('forget'),
    }),
    yes: on('yes'),
    http: on('http'),
    host: text('host') ?? '127.0.0.1',
    port: Number(text('port') ?? '8443'),
    passes: on('passes'),
    json: on('json'),
    once: on('once'),
    dryRun: on('dryRun'),
    verbose: on('verbose'),
    local: on('local'),
    newCa: on('newCa'),
    cni: on('cni'),
    delete: on('delete'),
    capacity: on('clusters'),
    ...(command === 'sim'
      ? {
          sim: {
            hours: Number(text('hours') ?? '1'),
            speed: Number(text('speed') ?? '60'),
            seed: Number(text('seed') ?? '1'),
            nodes: Number(text('nodes') ?? '20'),
            sessionsPerMinute: Number(text('sessionsPerMinute') ?? '20'),
            scenario: text('scenario') ?? 'waves',
            scale: flags.scale !== false,
          },
        }
      : {}),
  };
}

/** Runs one command line; resolves to the process exit status. */
export async function main(argv: readonly string[], env?: LocalEnvironment): Promise<number> {
  let status = 0;
  const root = program(async (command, flags) => {
    const options = await optionsOf(command, flags, env);
    const { commands } = await import('./commands.js');
    const run = commands[command];
    if (!run) throw new UsageError(`unknown command: ${command}`);
    status = await run(options);
  });
  root.configureOutput({
    writeOut: (text) => process.stdout.write(text),
    writeErr: (text) => process.stderr.write(text),
  });
  if (argv.length === 0) {
    process.stderr.write(root.helpInformation());
    return 2;
  }
  try {
    await root.parseAsync([...argv], { from: 'user' });
    return status;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are answers (Commander's exit code 0, `berth help CMD` included), not
      // errors; every other parse failure, help shown for a mistake among them, is a usage error.
      return error.exitCode === 0 ? 0 : 2;
    }
    process.stderr.write(`${failureText(error)}\n`);
    return exitCodeOf(error);
  }
}

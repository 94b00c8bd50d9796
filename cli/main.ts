/**
 * The `berth` command line (contract section 1). Every command runs the same runtime as the
 * Lambdas; only the adapters' endpoints differ.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../shared/config/errors.js';
import { kubeconfigFromEnvironment, loadConfigFile } from '../shared/config/load.js';
import type { BerthConfig } from '../shared/config/schema.js';
import { commands } from './commands.js';

const USAGE = `usage: berth <command> [flags]

commands:
  serve                 the local server (https://127.0.0.1:8443) and the scheduled passes
  status [--json]       usage of every range and pool
  repair --once         one repair pass, JSON summary
  scale --once [--dry-run]  one node scale pass, JSON plan/actions
  eni --once            one ENI pool maintenance and GC pass
  manifests [--url URL [--ca-file FILE] | --stack NAME] [--json]
                        the Kubernetes manifests a cluster needs (default: the local server)

flags:
  --config FILE             JSON config (contract section 2)
  --data-dir DIR            DynamoDB Local files and TLS material (default .berth/)
  --dynamodb-endpoint URL   use this DynamoDB endpoint
  --table NAME              use this table (with normal AWS credentials unless an endpoint is given)
  --kubeconfig PATH         the cluster the passes and bindings talk to (default: KUBECONFIG)
  serve: --http, --port N (default 8443)`;

/** Parsed command line, shared by every command. */
export interface CliOptions {
  readonly command: string;
  readonly config: BerthConfig;
  readonly dataDir: string;
  readonly dynamodbEndpoint?: string;
  readonly table?: string;
  readonly kubeconfig?: string;
  readonly http: boolean;
  readonly port: number;
  readonly json: boolean;
  readonly once: boolean;
  readonly dryRun: boolean;
  readonly url?: string;
  readonly stack?: string;
  readonly caFile?: string;
}

/** Thrown for a bad command line; printed with the usage, exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

async function parse(argv: readonly string[]): Promise<CliOptions> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (!command) throw new UsageError('no command given');
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`);
  const port = Number(values.port ?? '8443');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port: "${values.port}" is not a port number (0-65535)`);
  }
  const kubeconfig = values.kubeconfig ?? kubeconfigFromEnvironment();
  return {
    command,
    config: await loadConfigFile(values.config),
    dataDir: values['data-dir'] ?? '.berth',
    ...(values['dynamodb-endpoint'] ? { dynamodbEndpoint: values['dynamodb-endpoint'] } : {}),
    ...(values.table ? { table: values.table } : {}),
    ...(kubeconfig ? { kubeconfig } : {}),
    ...(values.url ? { url: values.url } : {}),
    ...(values.stack ? { stack: values.stack } : {}),
    ...(values['ca-file'] ? { caFile: values['ca-file'] } : {}),
    http: values.http ?? false,
    port,
    json: values.json ?? false,
    once: values.once ?? false,
    dryRun: values['dry-run'] ?? false,
  };
}

const OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  'dynamodb-endpoint': { type: 'string' },
  table: { type: 'string' },
  kubeconfig: { type: 'string' },
  http: { type: 'boolean' },
  port: { type: 'string' },
  json: { type: 'boolean' },
  once: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  url: { type: 'string' },
  stack: { type: 'string' },
  'ca-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Runs one command line; resolves to the process exit status. */
export async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  try {
    const options = await parse(argv);
    const command = commands[options.command];
    if (!command) throw new UsageError(`unknown command: ${options.command}`);
    return await command(options);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.problems.join('\n')}\n`);
      return 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`berth: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw error;
  }
}

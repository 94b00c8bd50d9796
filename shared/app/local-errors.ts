/**
 * How a local host of berth (the `berth` command) fails, and the exit status each failure gets:
 * the failures of every layer below, told apart here where they are known.
 */
import { ConfigError } from '../config/errors.js';
import { KubeConfigError, KubernetesUnreachableError } from '../k8s/errors.js';
import { DynamoDbLocalError, LocalCaError } from '../local/errors.js';
import { RepairIncompleteError } from '../repair/errors.js';
import { HolderQueryError } from '../status/errors.js';
import { ItemSchemaTooNewError } from '../store/errors.js';

/** A bad command line or flag combination; exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * The environment refused: a kubeconfig that does not exist, an API server or DynamoDB endpoint
 * that does not answer, a port in use, missing AWS region or credentials, a table a newer berth
 * wrote; exit status 3.
 */
export class EnvironmentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EnvironmentError';
  }
}

/** Socket errors that mean "nothing answered there" or "that address is taken". */
const REFUSING_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EADDRINUSE',
  'EACCES',
  'ETIMEDOUT',
  // A program berth runs is missing (Java, for DynamoDB Local).
  'ENOENT',
]);
/** The AWS SDK's names for missing credentials or region. */
const AWS_SETUP_ERRORS = new Set(['CredentialsProviderError', 'ExpiredTokenException']);

/**
 * What one error says of the environment: that it refused, with the fix where berth knows one;
 * undefined for any other error.
 */
function refusalIn(error: Error): { readonly fix?: string } | undefined {
  if (error instanceof KubernetesUnreachableError) {
    return {
      fix: "check that the API server of the kubeconfig's context answers (kubectl get --raw /readyz), or pass --kubeconfig / --context",
    };
  }
  if (/Region is missing/i.test(error.message)) {
    return { fix: 'set AWS_REGION, pass --region, or use an AWS profile that names a Region' };
  }
  if (AWS_SETUP_ERRORS.has(error.name)) {
    return {
      fix: 'configure AWS credentials: AWS_PROFILE, aws configure (or aws sso login), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY',
    };
  }
  const code = (error as { code?: unknown }).code;
  const refused =
    error instanceof EnvironmentError ||
    // DynamoDB Local cannot serve: a damaged or empty database file, a JVM that would not start.
    error instanceof DynamoDbLocalError ||
    // The table holds items a newer berth wrote: its message names the fix (upgrade berth).
    error instanceof ItemSchemaTooNewError ||
    // The SDK's request timeout: an endpoint that took the connection and never answered.
    error.name === 'TimeoutError' ||
    error instanceof KubeConfigError ||
    (typeof code === 'string' && REFUSING_CODES.has(code));
  return refused ? {} : undefined;
}

/**
 * The environment's refusal along the whole cause chain (a pass that stopped because the API
 * server did not answer was refused by the environment), with the first fix the chain names.
 */
function environmentRefusal(error: unknown): { readonly fix?: string } | undefined {
  let refused: { readonly fix?: string } | undefined;
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const found = refusalIn(cause);
    if (found?.fix) return found;
    refused ??= found;
  }
  return refused;
}

/**
 * 2 for usage (a config that does not validate among it), 3 for the environment, 1 for anything
 * else (a pass or command that failed). A local CA that cannot sign for the addresses asked
 * waits for the user's choice of `--new-ca`: a usage matter, as a missing flag is.
 */
export function exitCodeOf(error: unknown): 1 | 2 | 3 {
  if (
    error instanceof UsageError ||
    error instanceof LocalCaError ||
    error instanceof ConfigError ||
    // A `status --holder` value outside every range: the user's to correct.
    error instanceof HolderQueryError
  )
    return 2;
  return environmentRefusal(error) ? 3 : 1;
}

/** An error as the CLI prints it: its message, and the fix when the environment refused. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const fix = environmentRefusal(error)?.fix;
  return fix ? `${message}: ${fix}` : message;
}

/**
 * A failure as the CLI's last line says it: a config's problems one a line, as they name the
 * keys to fix; anything else `berth: ` and its description.
 */
export function failureText(error: unknown): string {
  if (error instanceof ConfigError) return error.problems.join('\n');
  return `berth: ${describeFailure(error)}`;
}

/** Whether a repair pass stopped before it completed (it advanced no leak counter). */
export function passIncomplete(error: unknown): error is RepairIncompleteError {
  return error instanceof RepairIncompleteError;
}

/** The fix for a failure a pass recorded by its error's name and message, when it was the environment's. */
export function recordedFailureFix(failure: { code: string; message: string }): string | undefined {
  return environmentRefusal(Object.assign(new Error(failure.message), { name: failure.code }))?.fix;
}

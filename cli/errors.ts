/** How the `berth` command fails, and the exit status each failure gets. */
import { KubeConfigError, KubernetesUnreachableError } from '../shared/k8s/errors.js';

/** A bad command line or flag combination; exit status 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * The environment refused: a kubeconfig that does not exist, an API server or DynamoDB endpoint
 * that does not answer, a port in use, missing AWS region or credentials; exit status 3.
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
]);
/** The AWS SDK's names for missing credentials or region. */
const AWS_SETUP_ERRORS = new Set(['CredentialsProviderError', 'ExpiredTokenException']);

/**
 * 2 for usage, 3 for the environment, 1 for anything else (a pass or command that failed). The
 * environment is looked for along the whole cause chain: a pass that stopped because the API
 * server did not answer was refused by the environment.
 */
export function exitCodeOf(error: unknown): 1 | 2 | 3 {
  if (error instanceof UsageError) return 2;
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (
      cause instanceof EnvironmentError ||
      cause instanceof KubeConfigError ||
      cause instanceof KubernetesUnreachableError
    )
      return 3;
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && REFUSING_CODES.has(code)) return 3;
    if (AWS_SETUP_ERRORS.has(cause.name) || /Region is missing/i.test(cause.message)) return 3;
  }
  return 1;
}

/** What to do about an environment that refused, found along the cause chain; none for others. */
export function fixFor(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof KubernetesUnreachableError) {
      return "check that the API server of the kubeconfig's context answers (kubectl get --raw /readyz), or pass --kubeconfig / --context";
    }
    if (/Region is missing/i.test(cause.message)) {
      return 'set AWS_REGION, pass --region, or use an AWS profile that names a Region';
    }
    if (AWS_SETUP_ERRORS.has(cause.name)) {
      return 'configure AWS credentials: AWS_PROFILE, aws configure (or aws sso login), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY';
    }
  }
  return undefined;
}

/** An error as the CLI prints it: its message, and the fix when the environment refused. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const fix = fixFor(error);
  return fix ? `${message}: ${fix}` : message;
}

/** The fix for a failure a pass recorded by its error's name and message, when it was the environment's. */
export function recordedFailureFix(failure: { code: string; message: string }): string | undefined {
  return fixFor(Object.assign(new Error(failure.message), { name: failure.code }));
}

/** Errors of the local stack's own material. */

/**
 * The local CA cannot sign a server certificate (its key was never kept, or it is expiring), and
 * a new CA, which every `caBundle` already applied stops matching, was not asked for.
 */
export class LocalCaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LocalCaError';
  }
}

/**
 * DynamoDB Local cannot serve: its database file is damaged or empty, it exited while starting,
 * or it never answered. The environment refused (the CLI's exit status 3); the message names the
 * file or endpoint and the fix, never the JVM's stack trace.
 */
export class DynamoDbLocalError extends Error {
  /** The database file at fault, when it is the file (damaged, empty, unreadable). */
  readonly file: string | undefined;
  constructor(message: string, options?: { cause?: unknown; file?: string }) {
    super(message, options);
    this.name = 'DynamoDbLocalError';
    this.file = options?.file;
  }
}

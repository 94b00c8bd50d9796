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

/** Errors of the status reports. */

/**
 * A `status --holder` value berth cannot hold: outside every range the config names (a cluster
 * IP outside `serviceCIDRs`, a port in none of the port ranges), or of no shape the lookup
 * takes. The user's mistake (the CLI's exit status 2, HTTP 400): the message names the ranges.
 */
export class HolderQueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HolderQueryError';
  }
}

/** The fronts berth offers a port, in the words the config, the store and the queue share. */

/** The fronts a port may ask for. */
export const FRONT_KINDS = ['nlb', 'accelerator'] as const;
/** One of `FRONT_KINDS`. */
export type FrontKind = (typeof FRONT_KINDS)[number];

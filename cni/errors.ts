/**
 * CNI error results. The runtime reads `code` and `msg` from stdout when the plugin exits
 * non-zero; the codes below 100 are the specification's, the rest berth's own.
 */

/** Error codes of the CNI specification 1.0.0, and berth's from 100 up. */
export const CNI_ERROR = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnvironment: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  /**
   * libcni's `ErrInternal` (containernetworking/cni `pkg/types/types.go`): berth's node IP API
   * answered something the plugin cannot use, or the plugin itself failed.
   */
  internal: 999,
  /** berth's node IP API refused the request (the message says why). */
  refused: 100,
  /** The node's routing for the pod could not be set up or verified. */
  routing: 101,
  /** CHECK found the pod's address or routing not as berth assigned it. */
  mismatch: 102,
} as const;

/** A failure the plugin reports as a CNI error result: never a stack trace. */
export class CniError extends Error {
  readonly code: number;
  readonly details: string | undefined;
  constructor(code: number, message: string, details?: string) {
    super(message);
    this.name = 'CniError';
    this.code = code;
    this.details = details;
  }
}

/**
 * A value as a message shows it: JSON (so an object reads as itself, never `[object Object]`),
 * cut to 80 characters.
 */
export function shown(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

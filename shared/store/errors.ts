/** Failures of berth's DynamoDB table itself. */

/**
 * An item written by a newer berth (its schema version above this code's): refused, never
 * misread, never overwritten. Running the newer berth again is the fix.
 */
export class ItemSchemaTooNewError extends Error {
  /** `pk / sk` of the item. */
  readonly key: string;
  /** The version the item carries. */
  readonly version: number;
  /** The newest version this code understands. */
  readonly understood: number;
  constructor(key: string, version: number, understood: number) {
    super(
      `table item ${key} has schema version ${version}, newer than this berth understands (${understood}): upgrade berth to the version that wrote it (a downgrade reads and writes nothing it cannot understand; nothing was changed)`,
    );
    this.name = 'ItemSchemaTooNewError';
    this.key = key;
    this.version = version;
    this.understood = understood;
  }
}

/**
 * A count change whose request failed after it may have reached DynamoDB (a 5xx answer, a lost
 * connection, a timeout): applied or not, nobody can tell, and sending it again could apply it
 * twice (`once-only-write.ts`). What `what` names says what heals a change that did not land.
 */
export class WriteOutcomeUnknownError extends Error {
  /**
   * The request's own failure. Not `cause`: the SDK's retry classification follows `cause`
   * (`isTransientError` in @smithy/core's retry submodule), and would send the write again.
   */
  readonly failure: unknown;
  constructor(what: string, failure: unknown) {
    super(
      `${what}: DynamoDB may or may not have applied it (${(failure as Error)?.message ?? String(failure)}); not sent again, since a second send could apply it twice`,
    );
    this.name = 'WriteOutcomeUnknownError';
    this.failure = failure;
  }
}

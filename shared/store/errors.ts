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

/**
 * The schema version every berth item carries, and what a write and a read do with it.
 *
 * Why a version on each item, not one for the table: one table holds many clusters' items, and
 * an upgrade is rolled out function by function, so during a deploy an old and a new berth write
 * the same table. Each item says which layout wrote it, and each reader decides item by item.
 *
 * The policy:
 * - every write that creates or rewrites an item stamps `sv` = `SCHEMA_VERSION` (a number);
 * - an item without `sv` was written by 0.1.0, whose layout is version 1: read as version 1, so
 *   an upgrade from 0.1.0 needs no step;
 * - an item whose `sv` is above `SCHEMA_VERSION` was written by a newer berth, whose meaning this
 *   code cannot know: a read refuses it (`ItemSchemaTooNewError`) instead of misreading it, and a
 *   write is conditioned on `sv` being absent or at most `SCHEMA_VERSION`, so a downgraded berth
 *   never overwrites, updates or deletes it (nothing to undo after the upgrade back; a batch,
 *   which takes no condition, is covered by its caller's read: ./versioned-client.ts);
 * - a layout change that old code would misread raises `SCHEMA_VERSION`; one that old code reads
 *   correctly (a new optional attribute it ignores) keeps it.
 *
 * Cost: `sv` with a one-digit value is 2 bytes of name and 2 of number, 4 bytes per item. The
 * hot items stay far from a 1 KB write-unit boundary: a host port count item is at most about
 * 0.75 KB (64 counts, 64 marks, the last-add time) and an ENI address item under 0.3 KB. The
 * guard is a condition expression, which DynamoDB does not bill, and the item a refused write
 * answers with (`ReturnValuesOnConditionCheckFailure`) costs nothing either.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { ItemSchemaTooNewError } from './errors.js';
import { TABLE_SCHEMA } from './table.js';

/** The item layout this code writes and understands. */
export const SCHEMA_VERSION = 1;

/** The attribute that carries it: short, since every byte of an item is billed on every write. */
export const SCHEMA_VERSION_ATTRIBUTE = 'sv';

/** The version of an item written before items carried one (0.1.0). */
export const UNVERSIONED = 1;

/** Placeholders of the write guard, named so no adapter's own placeholder can collide. */
const NAME = '#berthSchemaVersion';
const VALUE = ':berthSchemaVersion';

/** The `SET` keyword of an update expression (a placeholder such as `#set` is not one). */
const SET_CLAUSE = /(^|\s)SET\s+/i;

type Item = Record<string, AttributeValue>;

/** The version an item was written at (absent: 0.1.0's, version 1). */
export function schemaVersionOf(item: Item): number {
  const written = item[SCHEMA_VERSION_ATTRIBUTE]?.N;
  return written === undefined ? UNVERSIONED : Number(written);
}

/** Throws `ItemSchemaTooNewError` for an item written by a newer berth; answers the item. */
export function readable<T extends Item | undefined>(item: T): T {
  if (item === undefined) return item;
  const version = schemaVersionOf(item);
  if (version > SCHEMA_VERSION) {
    const { partitionKey: PK, sortKey: SK } = TABLE_SCHEMA;
    throw new ItemSchemaTooNewError(
      `${item[PK]?.S ?? '?'} / ${item[SK]?.S ?? '?'}`,
      version,
      SCHEMA_VERSION,
    );
  }
  return item;
}

/** The item with today's version stamped on it. */
export function stamped(item: Item): Item {
  return { ...item, [SCHEMA_VERSION_ATTRIBUTE]: { N: String(SCHEMA_VERSION) } };
}

/** The parts of a write that its condition and update expressions are made of. */
export interface Expressions {
  readonly ConditionExpression?: string | undefined;
  readonly UpdateExpression?: string | undefined;
  readonly ExpressionAttributeNames?: Record<string, string> | undefined;
  readonly ExpressionAttributeValues?: Item | undefined;
}

/**
 * The write's condition with the guard added: the item has no version, or one this code
 * understands. With `update`, the update expression also sets today's version (a `SET` clause
 * joined or added; DynamoDB allows each clause keyword once).
 */
export function guarded<T extends Expressions>(write: T, update: boolean): T & Expressions {
  const guard = `(attribute_not_exists(${NAME}) OR ${NAME} <= ${VALUE})`;
  const set = `${NAME} = ${VALUE}`;
  const expression = write.UpdateExpression ?? '';
  const withSet = SET_CLAUSE.test(expression)
    ? expression.replace(SET_CLAUSE, `$1SET ${set}, `)
    : `SET ${set} ${expression}`.trim();
  return {
    ...write,
    ConditionExpression: write.ConditionExpression
      ? `(${write.ConditionExpression}) AND ${guard}`
      : guard,
    ...(update ? { UpdateExpression: withSet } : {}),
    ExpressionAttributeNames: {
      ...write.ExpressionAttributeNames,
      [NAME]: SCHEMA_VERSION_ATTRIBUTE,
    },
    ExpressionAttributeValues: {
      ...write.ExpressionAttributeValues,
      [VALUE]: { N: String(SCHEMA_VERSION) },
    },
  };
}

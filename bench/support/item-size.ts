/**
 * DynamoDB's item size and capacity rules, for units DynamoDB Local does not report (failed
 * conditional writes) and for checking the units it does.
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** Bytes DynamoDB bills for an item: attribute names plus values. */
export function itemSizeBytes(item: Readonly<Record<string, AttributeValue>>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8(name) + valueSize(value);
  return size;
}

/** Write units for one write of an item of `bytes` (1 KB units, at least 1). */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  // Lists and maps: 3 bytes of overhead plus 1 per element, names of map entries included.
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M !== undefined) {
    return (
      3 + Object.entries(value.M).reduce((sum, [name, v]) => sum + 1 + utf8(name) + valueSize(v), 0)
    );
  }
  return 0;
}

/** Numbers: about one byte per two significant digits, plus one (at most 21). */
function numberSize(text: string): number {
  const digits = text
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '');
  return Math.min(21, Math.ceil(Math.max(1, digits.replace(/0+$/, '').length) / 2) + 1);
}

function utf8(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

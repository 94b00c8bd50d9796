/**
 * RFC 3339 timestamps for berth's node annotations. Parsing is strict (Go writes nanoseconds,
 * people write offsets; both are read), so a hand-edited value is rejected instead of guessed.
 */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Epoch ms of an RFC 3339 timestamp, or undefined when the text is not one. */
export function parseRfc3339(text: string): number | undefined {
  const match = RFC3339.exec(text.trim());
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction = '', zulu, sign, oh, om] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) {
    return undefined;
  }
  const base = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls 31 February over into March: reject it instead.
  if (new Date(base).getUTCDate() !== day) return undefined;
  const millis = Number(fraction.padEnd(3, '0').slice(0, 3));
  const offsetMinutes = zulu ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  return base + millis - offsetMinutes * 60_000;
}

/** An epoch ms as RFC 3339 in UTC with milliseconds. */
export function formatRfc3339(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

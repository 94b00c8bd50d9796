/**
 * A readable test tag (`aid`, `id3`) made into an allocation id of berth's shape (20 base32
 * characters), since berth treats any other id on an object as absent.
 */
export function sid(tag: string): string {
  const digits: Record<string, string> = { '0': 'q', '1': 'r', '8': 's', '9': 't' };
  const body = tag.toLowerCase().replace(/[^a-z2-7]/g, (c) => digits[c] ?? 'x');
  return `${body}${'z'.repeat(20)}`.slice(0, 20);
}

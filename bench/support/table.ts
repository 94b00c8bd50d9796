/** A plain-text table for benchmark output: numbers right-aligned, text left-aligned. */

/** One table cell: text, or a number printed as given. */
export type Cell = string | number;

/** Renders rows under a header; every row has one cell per header. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly Cell[])[],
): string {
  const text = rows.map((row) =>
    row.map((cell) => (typeof cell === 'number' ? formatNumber(cell) : cell)),
  );
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...text.map((row) => (row[i] ?? '').length)),
  );
  const numeric = headers.map(
    (_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number'),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => {
        const width = widths[i] ?? 0;
        return numeric[i] ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [line(headers), rule, ...text.map(line)].join('\n');
}

/** Prints a table to stdout. */
export function printTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): void {
  console.log(formatTable(headers, rows));
}

function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '-';
  if (Number.isInteger(value)) return String(value);
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toFixed(digits);
}

/** Captures what a CLI command writes to stdout and stderr (restore with `vi.restoreAllMocks()`). */
import { vi } from 'vitest';

/** Starts capturing; the functions return everything written so far. */
export function captureOutput(): { out: () => string; err: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk));
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    err.push(String(chunk));
    return true;
  });
  return { out: () => out.join(''), err: () => err.join('') };
}

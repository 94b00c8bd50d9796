/** The log of `berth serve`: one line per event, with its time and level, as operators grep it. */

/** Writes lines at three levels: info to stdout, warnings and errors to stderr. */
export interface ServeLog {
  info(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

/** A log on the process's own streams. */
export function serveLog(now: () => Date = () => new Date()): ServeLog {
  const write = (stream: NodeJS.WriteStream, level: string) => (line: string) => {
    stream.write(`${now().toISOString()} ${level} ${line}\n`);
  };
  return {
    info: write(process.stdout, 'INFO'),
    warn: write(process.stderr, 'WARN'),
    error: write(process.stderr, 'ERROR'),
  };
}

/**
 * A warning written at most once a period (an outage of the table answers every request 503:
 * one line a minute says so, not one per request), counting the ones it held back.
 */
export function warnAtMostEvery(
  periodMs: number,
  warn: (line: string) => void,
  now: () => number = Date.now,
): (line: string) => void {
  let lastAt = Number.NEGATIVE_INFINITY;
  let held = 0;
  return (line) => {
    if (now() - lastAt < periodMs) {
      held += 1;
      return;
    }
    warn(held > 0 ? `${line} (and ${held} more since the last such line)` : line);
    lastAt = now();
    held = 0;
  };
}

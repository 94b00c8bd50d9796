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

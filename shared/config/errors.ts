/** A configuration that failed validation; `problems` holds one line per invalid key or value. */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[], options?: { cause?: unknown }) {
    super(`invalid berth configuration:\n${problems.join('\n')}`, options);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

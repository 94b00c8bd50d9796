/** Repair pass failures. */

/** Where a pass stopped. */
export type RepairStage = 'snapshot' | 'list' | 'decide' | 'write';

/**
 * The pass could not complete: the store or the API could not be read, or a write failed for a
 * reason other than a changed holder. No leak counter advanced; the CLI exits non-zero.
 */
export class RepairIncompleteError extends Error {
  readonly stage: RepairStage;
  /** Values recorded and released before the pass stopped (each write stands on its own). */
  readonly recorded: number;
  readonly released: number;

  constructor(
    stage: RepairStage,
    progress: { readonly recorded: number; readonly released: number },
    options: { cause: unknown },
  ) {
    const detail = options.cause instanceof Error ? options.cause.message : String(options.cause);
    super(`repair pass stopped while ${STAGE_WORDS[stage]}: ${detail}`, options);
    this.name = 'RepairIncompleteError';
    this.stage = stage;
    this.recorded = progress.recorded;
    this.released = progress.released;
  }
}

const STAGE_WORDS: Readonly<Record<RepairStage, string>> = {
  snapshot: 'reading the store',
  list: 'listing the cluster',
  decide: 'deciding',
  write: 'writing the repair',
};

/** Unprocessed ledger writes were still refused after every resend. */
export class LeakLedgerWriteError extends Error {
  readonly unprocessed: number;
  constructor(unprocessed: number, rounds: number) {
    super(`leak ledger: ${unprocessed} writes still unprocessed after ${rounds} rounds`);
    this.name = 'LeakLedgerWriteError';
    this.unprocessed = unprocessed;
  }
}

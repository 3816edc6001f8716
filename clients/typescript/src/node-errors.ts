/**
 * Node only: the error of a `FileStore` (`node.ts`), `LedgerError`, and how a failed file operation becomes one.
 */
import { StateError } from "./errors.js";

/** A `FileStore` that could not be read, locked or written (the state is left as it was): a `StateError`. `code` is
 * the system's error code when a file operation failed (`ENOSPC` and `EDQUOT`: the disk is full). */
export class LedgerError extends StateError {
  override name = "LedgerError";

  constructor(message: string, readonly code?: string) {
    super(message);
  }
}

/** The error codes of a full disk (or of a full quota). */
const FULL = ["ENOSPC", "EDQUOT"];

/** What the refusal of a damaged state, or of a missing one beside its traces, adds: the one way to start over. */
export const RESET = "; to start over deliberately as a new device, delete the whole folder first";

/** `err`, a failed file operation on `path`, as a `LedgerError` keeping its code. */
export function fileError(path: string, err: unknown): LedgerError {
  return new LedgerError(`${path}: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code);
}

/** Whether `err` is a `LedgerError` of a file operation that failed for lack of room. */
export function diskFull(err: unknown): err is LedgerError {
  return err instanceof LedgerError && FULL.includes(err.code ?? "");
}

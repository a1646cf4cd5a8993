/**
 * How a limit error tells its reader to raise the limit, in the words of
 * where the session was made: an option of the library, a flag of the CLI, a
 * setting of the server's operator. Each is a clause that ends a sentence
 * ("…; use less memory, or raise it with --memory.").
 */
export interface LimitNames {
  /** The session's memory budget (`limits.memoryBytes`). */
  memoryBytes: string;
  /** What /mnt/data may hold (`limits.dataBytes`). */
  dataBytes: string;
  /** The largest file moved in or out (`fileTransferBytes`). */
  fileTransferBytes: string;
}

export const LIBRARY_LIMIT_NAMES: Readonly<LimitNames> = Object.freeze({
  memoryBytes: 'raise the option `limits.memoryBytes`',
  dataBytes: 'raise the option `limits.dataBytes`',
  fileTransferBytes: 'raise the option `fileTransferBytes`',
});

export const CLI_LIMIT_NAMES: Readonly<LimitNames> = Object.freeze({
  memoryBytes: 'raise it with --memory (e.g. --memory 4G)',
  dataBytes: 'raise it with --max-data (e.g. --max-data 2G)',
  fileTransferBytes: 'raise it with --max-upload (e.g. --max-upload 256M)',
});

export const SERVER_LIMIT_NAMES: Readonly<LimitNames> = Object.freeze({
  memoryBytes: "the server's operator sets it for every session",
  dataBytes: "the server's operator sets it for every session",
  fileTransferBytes: "the server's operator sets it for every session",
});

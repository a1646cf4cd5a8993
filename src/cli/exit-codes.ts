/** Exit codes of the sandcell command. */
export const EXIT_OK = 0;
export const EXIT_CODE_ERROR = 1;
export const EXIT_USAGE = 2;
export const EXIT_SANDBOX_FAILURE = 3;
export const EXIT_TIMEOUT = 124;
/** Ctrl-C interrupted the code (128 + SIGINT, as shells report it). */
export const EXIT_INTERRUPTED = 130;

/** Thrown by commands to end with a message and an exit code. */
export class CliExit extends Error {
  constructor(
    readonly exitCode: number,
    message = '',
  ) {
    super(message);
  }
}

/** The model could not be reached or answered with an error (chat, ask). */
export const EXIT_MODEL_FAILURE = 4;

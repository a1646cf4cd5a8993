/**
 * Code that asked its interpreter to exit (`Execution.exitStatus`: Python's sys.exit, exit() or
 * quit(), bash's exit): `run` and `repl` end with its status and show what the interpreter would
 * print, not an error.
 */
import type { Execution } from '../session/execution.js';
import { printError } from './render.js';

/**
 * What Python prints when a script exits: a SystemExit's argument unless it is an int (or None,
 * status 0), as `sys.exit("no input file")` prints its message. The kernel gives the argument as
 * the error's value, as Jupyter shows it; bash prints nothing of its own.
 */
export function exitMessage(execution: Execution): string | undefined {
  const { error } = execution;
  if (execution.exitStatus === undefined || error?.name !== 'SystemExit') return undefined;
  return /^(-?\d+|True)$/.test(error.value) ? undefined : error.value;
}

/** The run's error as `printError` shows it; for code that exited, only what its interpreter prints. */
export function printErrorOrExit(execution: Execution): void {
  if (execution.exitStatus === undefined) {
    printError(execution);
    return;
  }
  const message = exitMessage(execution);
  if (message !== undefined) process.stderr.write(`${message}\n`);
}

/**
 * The chat agent's `run_shell_command` tool: one `bash -c` command in the
 * same sandbox as the Python code (same /mnt/data, same limits), its result
 * shaped as an execution so approval, reports, events and every renderer
 * treat it like a piece of code.
 */
import type { CommandResult } from '../session/command.js';
import type { Execution } from '../session/execution.js';

export const RUN_SHELL_COMMAND = 'run_shell_command';

export const SHELL_COMMAND_DESCRIPTION =
  'Runs one shell command with bash -c in the same sandbox as the Python code: working directory /mnt/data (the same files Python sees), no network, nothing can be installed. ' +
  'Each call is a fresh shell (cd and variables do not carry over). Returns the exit code, stdout and stderr, and the names and sizes of files it wrote. Use it for file work (ls, head, wc, unzip, sort); use Python for analysis.';

/** The `context` of an execution that was a shell command: commands run beside the kernels, in no context. */
export const SHELL_COMMAND_CONTEXT = 'shell-command';

/** A command's result as an execution: exit 0 is ok, any other exit an error naming the code (and signal), a timeout a timeout. */
export function commandExecution(result: CommandResult): Execution {
  const failed = result.exitCode !== 0 || result.timedOut;
  const ending = result.signal
    ? `ended by ${result.signal} (exit code ${result.exitCode})`
    : `exited with code ${result.exitCode}`;
  return {
    status: result.timedOut ? 'timeout' : failed ? 'error' : 'ok',
    context: SHELL_COMMAND_CONTEXT,
    language: 'bash',
    stdout: result.stdout,
    stderr: result.stderr,
    results: [],
    ...(failed
      ? {
          error: {
            name: result.timedOut ? 'TimeoutError' : 'CommandFailed',
            value: result.timedOut ? `The command ran past its time limit and was killed.` : `The command ${ending}.`,
            traceback: [],
          },
        }
      : {}),
    executionCount: 0,
    durationMs: result.durationMs,
    ...(result.outputTruncated ? { outputTruncated: true } : {}),
  };
}

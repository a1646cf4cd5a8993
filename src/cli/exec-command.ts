/** `sandcell exec`: one shell command in a fresh sandbox, its output as it comes and its exit code passed on. */
import { InvalidInputError } from '../errors.js';
import type { BackendCliOptions } from './backend-option.js';
import { CliExit, EXIT_INTERRUPTED, EXIT_TIMEOUT, EXIT_USAGE } from './exit-codes.js';
import type { LimitCliOptions } from './limit-options.js';
import type { NetworkCliOptions } from './network-options.js';
import { commandCutNote, copyOutputFiles, dim, printRefused, savedFileLine } from './render.js';
import { shellQuote } from './shell-quote.js';
import { startSessionWithUploads } from './start-session.js';
import { optionalDurationFlag, optionalSizeFlag } from './unit-flags.js';

export interface ExecCommandOptions extends BackendCliOptions, LimitCliOptions, NetworkCliOptions {
  upload: string[];
  outputDir: string;
  timeout?: string;
}

export async function execCommand(words: string[], options: ExecCommandOptions): Promise<number> {
  if (words.length === 0) {
    throw new CliExit(EXIT_USAGE, 'Give the command after --: `sandcell exec -- ls -la /mnt/data`.');
  }
  const timeoutMs = optionalDurationFlag('--timeout', options.timeout);
  const command = words.map(shellQuote).join(' ');
  const { session, uploaded } = await startSessionWithUploads(options, { timeoutMs });
  try {
    // Ctrl-C kills the command; a second one (or SIGTERM) ends the session and sandcell.
    const interrupt = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
      if (signal === 'SIGINT' && !interrupt.signal.aborted) {
        interrupt.abort();
        return;
      }
      void session.close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const result = await session.commands
      .run(command, {
        signal: interrupt.signal,
        onStdout: (text) => process.stdout.write(text),
        onStderr: (text) => process.stderr.write(text),
      })
      .finally(() => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      });
    // The command's stdout is the user's data: sandcell's own notes go to stderr.
    if (result.outputTruncated) {
      const outputBytes = optionalSizeFlag('--max-output', options.maxOutput);
      process.stderr.write(dim(`${commandCutNote(outputBytes)}\n`, process.stderr));
    }
    if (result.timedOut) process.stderr.write(`The command ran past its time limit and was killed.\n`);
    const files = await copyOutputFiles(session, options.outputDir, uploaded, printRefused);
    for (const copied of files) process.stderr.write(dim(`${savedFileLine(copied)}\n`, process.stderr));
    if (result.timedOut) return EXIT_TIMEOUT;
    if (interrupt.signal.aborted) return EXIT_INTERRUPTED;
    return result.exitCode;
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT_USAGE, error.message);
    throw error;
  } finally {
    await session.close();
  }
}

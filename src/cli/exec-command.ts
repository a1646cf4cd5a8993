/**
 * `sandcell exec -- CMD ARGS…`: one shell command in a fresh sandbox. Its
 * stdout and stderr go to the terminal's as they come, new files in
 * /mnt/data are copied out, and sandcell exits with the command's exit code.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { createSession } from '../session/session.js';
import { type BackendCliOptions, backendFromOptions } from './backend-option.js';
import { CliExit, EXIT_INTERRUPTED, EXIT_TIMEOUT, EXIT_USAGE } from './exit-codes.js';
import { type LimitCliOptions, limitSessionOptions } from './limit-options.js';
import { copyOutputFiles, dim, printRefused, savedFileLine } from './render.js';
import { parseTimeout } from './run-command.js';
import { startStatus } from './status.js';

export interface ExecCommandOptions extends BackendCliOptions, LimitCliOptions {
  upload: string[];
  outputDir: string;
  timeout?: string;
}

/** One argument as a bash word: single-quoted, so no character in it is special to the shell. */
export function shellQuote(argument: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(argument)) return argument;
  return `'${argument.replaceAll("'", `'\\''`)}'`;
}

export async function execCommand(words: string[], options: ExecCommandOptions): Promise<number> {
  if (words.length === 0) {
    throw new CliExit(EXIT_USAGE, 'Give the command after --: `sandcell exec -- ls -la /mnt/data`.');
  }
  const timeoutMs = parseTimeout(options.timeout);
  const command = words.map(shellQuote).join(' ');
  const uploads = await Promise.all(
    options.upload.map(async (hostPath) => {
      try {
        return { name: path.basename(hostPath), content: await readFile(hostPath) };
      } catch (error) {
        throw new CliExit(EXIT_USAGE, `Cannot upload ${hostPath}: ${(error as Error).message}`);
      }
    }),
  );
  const backend = await backendFromOptions(options);
  const status = startStatus(process.stderr, 'starting sandbox');
  const session = await createSession({
    backend,
    ...(options.env ? { environmentName: options.env } : {}),
    ...limitSessionOptions(options),
    ...(timeoutMs ? { timeoutMs } : {}),
  }).finally(() => status.stop());
  try {
    for (const upload of uploads) {
      await session.files.write(upload.name, upload.content);
      process.stderr.write(dim(`uploaded ${upload.name} → /mnt/data/${upload.name}\n`, process.stderr));
    }
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
    if (result.outputTruncated) process.stderr.write(dim('[output was cut at the per-stream limit]\n', process.stderr));
    if (result.timedOut) process.stderr.write(`The command ran past its time limit and was killed.\n`);
    const files = await copyOutputFiles(
      session,
      options.outputDir,
      new Set(uploads.map((upload) => upload.name)),
      printRefused,
    );
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

/** `sandcell run`: one file of code in a fresh session; output as it comes, files saved after. */
import { readFile } from 'node:fs/promises';
import { InvalidInputError } from '../errors.js';
import type { Execution } from '../session/execution.js';
import type { Language } from '../session/languages.js';
import { printErrorOrExit } from './code-exit.js';
import { CliExit, EXIT_CODE_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE } from './exit-codes.js';
import type { LimitCliOptions } from './limit-options.js';
import { type LinkCliOptions, openLinkPublisher, publishSavedFiles } from './link-publisher.js';
import { missingFileHint } from './missing-file-hint.js';
import type { NetworkCliOptions } from './network-options.js';
import {
  copyOutputFiles,
  dim,
  executionCutNote,
  filesNotShown,
  printRefused,
  resultText,
  savedFileLine,
  savedImageLine,
  saveResultImages,
} from './render.js';
import { LANGUAGE_NAMES, scriptLanguage } from './script-language.js';
import { startSessionWithUploads } from './start-session.js';
import { startStatus } from './status.js';
import { optionalDurationFlag, optionalSizeFlag } from './unit-flags.js';

export interface RunCommandOptions extends LimitCliOptions, NetworkCliOptions, LinkCliOptions {
  upload: string[];
  outputDir: string;
  timeout?: string;
  json?: boolean;
  backend?: string;
  rootfs?: string;
  /** The environment to run in (`sandcell env build`). */
  env?: string;
  /** Overrides the language the file's extension names. */
  language?: string;
}

async function readCode(file: string | undefined, language: Language | undefined): Promise<string> {
  if (file && file !== '-') {
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      throw new CliExit(EXIT_USAGE, `Cannot read ${file}: ${(error as Error).message}`);
    }
    return sourceText(bytes, file, language);
  }
  if (process.stdin.isTTY) {
    throw new CliExit(
      EXIT_USAGE,
      'Give a file to run, or pipe code in: `sandcell run script.py` or `echo "1+1" | sandcell run -`.',
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return sourceText(Buffer.concat(chunks), 'The code on standard input', language);
}

/**
 * The bytes as source code: UTF-8 text without NUL. Anything else is not
 * code (a binary file given by mistake) and is refused before a sandbox starts.
 */
export function sourceText(bytes: Buffer, name: string, language: Language | undefined = 'python'): string {
  const advice = `sandcell run takes ${language ? `${LANGUAGE_NAMES[language]} source` : 'source code'}; to give a data file to your code, pass it with --upload FILE.`;
  const nul = bytes.indexOf(0);
  if (nul !== -1) throw new CliExit(EXIT_USAGE, `${name} is a binary file (a NUL byte at offset ${nul}): ${advice}`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliExit(EXIT_USAGE, `${name} is not UTF-8 text: ${advice}`);
  }
}

export function exitCodeFor(execution: Execution, interrupted = false): number {
  if (execution.status === 'timeout') return EXIT_TIMEOUT;
  // The script's own sys.exit(n) (or bash's exit n) is its status, as its interpreter would make it.
  if (execution.exitStatus !== undefined) return execution.exitStatus;
  if (interrupted && execution.status === 'error') return EXIT_INTERRUPTED;
  return execution.status === 'error' ? EXIT_CODE_ERROR : EXIT_OK;
}

export async function runCommand(file: string | undefined, options: RunCommandOptions): Promise<number> {
  const timeoutMs = optionalDurationFlag('--timeout', options.timeout);
  let language: Language;
  try {
    language = scriptLanguage(file, options.language);
  } catch (error) {
    // A data file given by mistake (data.parquet) is better told to use --upload than to name a language.
    if (error instanceof CliExit && file && file !== '-') await readCode(file, undefined);
    throw error;
  }
  const code = await readCode(file, language);
  // With --store, a store that cannot link (a directory, a wrong credential) is said before any sandbox starts.
  const publisher = await openLinkPublisher('run', options);
  const { session, uploaded } = await startSessionWithUploads(options, { timeoutMs, quiet: options.json });
  try {
    const live = !options.json;
    // Ctrl-C interrupts the code, as in Jupyter; a second one (or SIGTERM) ends the session and sandcell.
    const interrupt = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
      if (signal === 'SIGINT' && !interrupt.signal.aborted) {
        interrupt.abort();
        process.stderr.write(dim('\ninterrupting… (Ctrl-C again to stop the sandbox and quit)\n', process.stderr));
        return;
      }
      void session.close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const execution = await session
      .run(code, {
        language,
        signal: interrupt.signal,
        // A script ends as its interpreter would run it: a JavaScript one once its timers and sockets are done.
        waitForEventLoop: true,
        onStdout: live ? (text) => process.stdout.write(text) : undefined,
        onStderr: live ? (text) => process.stderr.write(text) : undefined,
      })
      .finally(() => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      });
    let files = await copyOutputFiles(session, options.outputDir, uploaded, printRefused);
    const images = await saveResultImages(execution, options.outputDir, files);
    if (publisher && files.length > 0) {
      const status = startStatus(live ? process.stderr : undefined, `publishing files to ${publisher.location}`);
      files = await publishSavedFiles(publisher, session.id, files).finally(() => status.stop());
    }
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ ...execution, images: images.map((image) => image.file), files })}\n`);
      return exitCodeFor(execution, interrupt.signal.aborted);
    }
    for (const result of execution.results) {
      const saved = images.find((image) => image.result === result);
      const text = saved ? dim(savedImageLine(saved, files)) : resultText(result);
      if (text !== undefined) process.stdout.write(`${text}\n`);
    }
    printErrorOrExit(execution);
    const hint = missingFileHint(execution, file, uploaded);
    if (hint) process.stderr.write(`${hint}\n`);
    if (execution.outputTruncated) {
      const limits = {
        outputBytes: optionalSizeFlag('--max-output', options.maxOutput),
        resultBytes: optionalSizeFlag('--max-results', options.maxResults),
      };
      process.stderr.write(dim(`${executionCutNote(execution, limits)}\n`, process.stderr));
    }
    // A kernel that died in this run already said why in its error; a loss before it (between runs) has not.
    if (execution.stateLostReason && execution.error?.value !== execution.stateLostReason)
      process.stderr.write(`${execution.stateLostReason}\n`);
    // An image the code saved was named where it showed; each file is said once.
    for (const copied of filesNotShown(files, images)) process.stdout.write(`${dim(savedFileLine(copied))}\n`);
    return exitCodeFor(execution, interrupt.signal.aborted);
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT_USAGE, error.message);
    throw error;
  } finally {
    await session.close();
  }
}

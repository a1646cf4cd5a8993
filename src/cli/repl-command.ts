/**
 * `sandcell repl`: an interactive, stateful prompt in a sandbox, Python unless
 * `--language` names another. Multi-line input follows the kernel's own
 * completeness rules (IPython's, bash -n, R's parser…); Tab completes with the
 * kernel's completion; the code's input() reads the next line; Ctrl-C
 * interrupts the running code (not the session) or clears the line; Ctrl-D,
 * or the code's own exit (exit(), sys.exit(n), bash's exit), quits. Piped
 * input gets no prompts, as `python3 < file` shows none.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Execution, InputRequest } from '../session/execution.js';
import type { BackendCliOptions } from './backend-option.js';
import { printErrorOrExit } from './code-exit.js';
import type { LimitCliOptions } from './limit-options.js';
import { LineReader } from './line-reader.js';
import type { NetworkCliOptions } from './network-options.js';
import { dim, resultText, saveResultImages } from './render.js';
import { replCompleter } from './repl-completion.js';
import { LANGUAGE_NAMES, parseLanguageOption } from './script-language.js';
import { startSessionWithUploads } from './start-session.js';
import { startStatus } from './status.js';
import { optionalDurationFlag } from './unit-flags.js';

const HISTORY_LIMIT = 1000;
/** Without --timeout an input may run this long: a day, as good as none at a prompt. */
const NO_TIMEOUT_MS = 24 * 3600_000;

export interface ReplCommandOptions extends BackendCliOptions, LimitCliOptions, NetworkCliOptions {
  /** Files copied into /mnt/data first. */
  upload: string[];
  outputDir: string;
  timeout?: string;
  language?: string;
}

function historyFile(): string {
  const base = process.env.XDG_STATE_HOME ?? path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'sandcell', 'repl_history');
}

function loadHistory(): string[] {
  try {
    return readFileSync(historyFile(), 'utf8').split('\n').filter(Boolean).reverse().slice(0, HISTORY_LIMIT);
  } catch {
    return [];
  }
}

function saveHistory(history: string[]): void {
  try {
    mkdirSync(path.dirname(historyFile()), { recursive: true });
    writeFileSync(historyFile(), `${[...history].reverse().join('\n')}\n`);
  } catch {
    // history is a convenience
  }
}

export async function replCommand(options: ReplCommandOptions): Promise<number> {
  const language = parseLanguageOption(options.language) ?? 'python';
  const name = LANGUAGE_NAMES[language];
  // Python keeps its own prompts; another language shows its name, so a user knows where they type.
  const prompt = language === 'python' ? '>>> ' : `${language}> `;
  const continuation = language === 'python' ? '... ' : `${'.'.repeat(language.length)}> `;
  const timeoutMs = optionalDurationFlag('--timeout', options.timeout) ?? 0;
  const { session } = await startSessionWithUploads(options, { timeoutMs: timeoutMs > 0 ? timeoutMs : NO_TIMEOUT_MS });
  let context: string;
  const status = startStatus(process.stderr, `starting ${name}`);
  try {
    context = language === 'python' ? 'python' : (await session.createContext({ language })).id;
  } catch (error) {
    await session.close();
    throw error;
  } finally {
    status.stop();
  }
  const interactive = process.stdin.isTTY === true;
  // Piped, stdout holds the code's output alone.
  const banner = interactive ? process.stdout : process.stderr;
  banner.write(
    dim(
      `sandcell ${session.id}: ${name} in a sandbox. Files live in /mnt/data. Ctrl-C interrupts, Ctrl-D quits.\n`,
      banner,
    ),
  );
  /** The code entered, from its Enter (its completeness is still being checked) to its run's end. */
  let running: AbortController | undefined;
  let buffer: string[] = [];
  let indent = '';
  const reader = new LineReader(process.stdin, process.stdout, {
    history: loadHistory(),
    historySize: HISTORY_LIMIT,
    promptWhenPiped: false,
    completer: replCompleter({ session, context, earlierLines: () => buffer, busy: () => running !== undefined }),
  });
  /** Ctrl-C with no code running: the block typed so far is dropped, as Python's prompt drops it. */
  const dropInput = () => {
    buffer = [];
    indent = '';
    process.stdout.write(language === 'python' ? '\nKeyboardInterrupt\n' : '\n');
  };
  const onInterrupt = () => {
    if (running) {
      running.abort();
      return;
    }
    dropInput();
    reader.clearLine();
    if (reader.terminal) {
      reader.interface.setPrompt(prompt);
      reader.interface.prompt();
    }
  };
  // A terminal in raw mode hands Ctrl-C to readline; otherwise it arrives as SIGINT to the process group.
  reader.interface.on('SIGINT', onInterrupt);
  process.on('SIGINT', onInterrupt);

  /** The code's input() (or getpass()): the next line typed or piped; at the end of input, EOFError. */
  const readInput = async (request: InputRequest, signal: AbortSignal): Promise<string> => {
    // Piped, the prompt is output, as Python's input() writes it; at a terminal, the line's own prompt.
    if (!reader.terminal) process.stdout.write(request.prompt);
    const line = await reader.question(request.prompt, { signal, hidden: request.password });
    if (line === undefined) throw new Error('no more input');
    return line;
  };

  const runCode = async (code: string, run: AbortController): Promise<Execution | undefined> => {
    let execution: Execution | undefined;
    try {
      execution = await session.run(code, {
        context,
        signal: run.signal,
        onStdout: (text) => process.stdout.write(text),
        onStderr: (text) => process.stderr.write(text),
        onInput: (request) => readInput(request, run.signal),
      });
      const images = await saveResultImages(execution, options.outputDir);
      for (const result of execution.results) {
        const saved = images.find((image) => image.result === result);
        const text = saved ? dim(`[image saved to ${saved.file}]`) : resultText(result);
        if (text === undefined) continue;
        process.stdout.write(
          result.type === 'execute_result' && language === 'python'
            ? `Out[${execution.executionCount}]: ${text}\n`
            : `${text}\n`,
        );
      }
      printErrorOrExit(execution);
      // A kernel that died in this run already said why in its error.
      if (execution.stateLostReason && execution.error?.value !== execution.stateLostReason)
        process.stderr.write(`${execution.stateLostReason}\n`);
    } catch (error) {
      process.stderr.write(`${(error as Error).message}\n`);
    } finally {
      running = undefined;
    }
    // Even when showing it failed (an image not saved), the run happened: its exit counts.
    return execution;
  };

  let exitStatus: number | undefined;
  for (;;) {
    const line = await reader.question(buffer.length > 0 ? continuation : prompt, { prefill: indent });
    if (line === undefined) break;
    indent = '';
    buffer.push(line);
    const code = buffer.join('\n');
    if (code.trim() === '') {
      buffer = [];
      continue;
    }
    // From Enter on, Ctrl-C is the code's: its completeness is checked first.
    const submitted = new AbortController();
    running = submitted;
    // A blank line ends a block, as in Python's own prompt.
    const completeness =
      language === 'python' && line.trim() === '' && buffer.length > 1
        ? { status: 'complete', indent: 0 }
        : await session.checkComplete(code, { context }).catch(() => ({ status: 'complete', indent: 0 }));
    if (submitted.signal.aborted) {
      running = undefined;
      dropInput();
      continue;
    }
    if (completeness.status === 'incomplete') {
      running = undefined;
      indent = ' '.repeat(completeness.indent);
      continue;
    }
    buffer = [];
    // Input stays flowing while code runs, so Ctrl-C reaches the SIGINT handler.
    const execution = await runCode(code, submitted);
    // exit(), quit(), sys.exit(n), bash's exit: the code's own way to end the prompt, with its status.
    if (execution?.exitStatus !== undefined) {
      exitStatus = execution.exitStatus;
      break;
    }
  }
  process.off('SIGINT', onInterrupt);
  if (reader.terminal) saveHistory(reader.history);
  reader.close();
  // Ctrl-D leaves the cursor after the prompt.
  if (exitStatus === undefined && reader.terminal) process.stdout.write('\n');
  await session.close();
  return exitStatus ?? 0;
}

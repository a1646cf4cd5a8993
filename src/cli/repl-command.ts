/**
 * `sandcell repl`: an interactive, stateful prompt in a sandbox, Python unless
 * `--language` names another. Multi-line input follows the kernel's own
 * completeness rules (IPython's, bash -n, R's parser…); Ctrl-C interrupts
 * the running code (not the session) or clears the line; Ctrl-D quits.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createSession } from '../session/session.js';
import { type BackendCliOptions, backendFromOptions } from './backend-option.js';
import { type LimitCliOptions, limitSessionOptions } from './limit-options.js';
import { type NetworkCliOptions, networkSessionOptions } from './network-options.js';
import { dim, printError, resultText, saveResultImages } from './render.js';
import { LANGUAGE_NAMES, parseLanguageOption } from './script-language.js';
import { startStatus } from './status.js';

const HISTORY_LIMIT = 1000;

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

export async function replCommand(
  options: { outputDir: string; timeout?: string; language?: string } & BackendCliOptions &
    LimitCliOptions &
    NetworkCliOptions,
): Promise<number> {
  const language = parseLanguageOption(options.language) ?? 'python';
  const name = LANGUAGE_NAMES[language];
  // Python keeps its own prompts; another language shows its name, so a user knows where they type.
  const prompt = language === 'python' ? '>>> ' : `${language}> `;
  const continuation = language === 'python' ? '... ' : `${'.'.repeat(language.length)}> `;
  const status = startStatus(process.stderr, 'starting sandbox');
  const timeoutMs = options.timeout ? Number(options.timeout) * 1000 : 0;
  const backend = await backendFromOptions(options);
  const session = await createSession({
    backend,
    ...(options.env ? { environmentName: options.env } : {}),
    ...limitSessionOptions(options),
    ...networkSessionOptions(options),
    timeoutMs: timeoutMs > 0 ? timeoutMs : 24 * 3600_000,
  }).catch((error) => {
    status.stop();
    throw error;
  });
  let context: string;
  try {
    context = language === 'python' ? 'python' : (await session.createContext({ language })).id;
  } catch (error) {
    await session.close();
    throw error;
  } finally {
    status.stop();
  }
  process.stdout.write(
    dim(`sandcell ${session.id}: ${name} in a sandbox. Files live in /mnt/data. Ctrl-C interrupts, Ctrl-D quits.\n`),
  );
  const terminal = readline.createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: process.stdin.isTTY === true,
    history: loadHistory(),
    historySize: HISTORY_LIMIT,
    removeHistoryDuplicates: true,
  });
  let running: AbortController | undefined;
  let buffer: string[] = [];
  const onInterrupt = () => {
    if (running) {
      running.abort();
      return;
    }
    buffer = [];
    process.stdout.write(language === 'python' ? '\nKeyboardInterrupt\n' : '\n');
    // Drop what was typed, as Python's prompt does: to the end of the line (Ctrl-E), then all before it (Ctrl-U).
    terminal.write(null, { ctrl: true, name: 'e' });
    terminal.write(null, { ctrl: true, name: 'u' });
    terminal.setPrompt(prompt);
    terminal.prompt();
  };
  // A terminal in raw mode hands Ctrl-C to readline; otherwise it arrives as SIGINT to the process group.
  terminal.on('SIGINT', onInterrupt);
  process.on('SIGINT', onInterrupt);
  const closed = new Promise<void>((resolve) => terminal.once('close', resolve));

  const runCode = async (code: string): Promise<void> => {
    running = new AbortController();
    try {
      const execution = await session.run(code, {
        context,
        signal: running.signal,
        onStdout: (text) => process.stdout.write(text),
        onStderr: (text) => process.stderr.write(text),
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
      printError(execution);
      // A kernel that died in this run already said why in its error.
      if (execution.stateLostReason && execution.error?.value !== execution.stateLostReason)
        process.stderr.write(`${execution.stateLostReason}\n`);
    } catch (error) {
      process.stderr.write(`${(error as Error).message}\n`);
    } finally {
      running = undefined;
    }
  };

  terminal.setPrompt(prompt);
  terminal.prompt();
  for await (const line of terminal) {
    buffer.push(line);
    const code = buffer.join('\n');
    if (code.trim() === '') {
      buffer = [];
      terminal.setPrompt(prompt);
      terminal.prompt();
      continue;
    }
    // A blank line ends a block, as in Python's own prompt.
    const { status, indent } =
      language === 'python' && line.trim() === '' && buffer.length > 1
        ? { status: 'complete', indent: 0 }
        : await session.checkComplete(code, { context }).catch(() => ({ status: 'complete', indent: 0 }));
    if (status === 'incomplete') {
      terminal.setPrompt(continuation);
      terminal.prompt();
      if (indent > 0) terminal.write(' '.repeat(indent));
      continue;
    }
    buffer = [];
    // Input stays flowing while code runs, so Ctrl-C reaches the SIGINT handler.
    await runCode(code);
    terminal.setPrompt(prompt);
    terminal.prompt();
  }
  await closed;
  process.off('SIGINT', onInterrupt);
  saveHistory([...((terminal as unknown as { history?: string[] }).history ?? [])]);
  process.stdout.write('\n');
  await session.close();
  return 0;
}

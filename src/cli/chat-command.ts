/**
 * `sandcell chat`: the data-analysis chat. Reads the data, then answers
 * questions by having the model write Python that runs in a sandbox; `exit`
 * (or end of input) quits. Ctrl-C stops the current question.
 */
import { AbortError } from '../errors.js';
import type { AgentCommandOptions } from './agent-flags.js';
import { openDataChat, toCliExit } from './agent-options.js';
import { AgentRenderer, approvalPrompt, describeChat } from './agent-render.js';
import { type CommandIo, processIo } from './command-io.js';
import { EXIT_OK } from './exit-codes.js';
import { LineReader } from './line-reader.js';
import { dim, red } from './render.js';

const QUIT = new Set(['exit', 'quit', ':q']);

export async function chatCommand(options: AgentCommandOptions, io: CommandIo = processIo()): Promise<number> {
  const renderer = new AgentRenderer(io.stdout, io.stdout);
  const reader = new LineReader(io.stdin, io.stdout);
  let chat: Awaited<ReturnType<typeof openDataChat>>;
  try {
    chat = await openDataChat(options, {
      onEvent: renderer.onEvent,
      approve: options.approve ? approvalPrompt(reader, renderer, io.stdout) : undefined,
      progress: (text) => renderer.spin(text),
      backend: io.backend,
    });
  } catch (error) {
    reader.close();
    throw toCliExit(error);
  } finally {
    renderer.stopSpinner();
  }
  let running: AbortController | undefined;
  const interrupt = () => {
    if (running) {
      running.abort();
      return;
    }
    reader.close();
  };
  reader.interface.on('SIGINT', interrupt);
  process.on('SIGINT', interrupt);
  try {
    io.stdout.write(`${dim(`${describeChat(chat)}. Ask about the data; "exit" quits.`, io.stdout)}\n`);
    for (;;) {
      const line = await reader.question('> ');
      if (line === undefined) {
        // Ctrl-C or Ctrl-D at the prompt: end the prompt's line, so the shell's prompt starts on a line of its own.
        if (reader.terminal) io.stdout.write('\n');
        break;
      }
      const question = line.trim();
      if (!question) continue;
      if (QUIT.has(question.toLowerCase())) break;
      running = new AbortController();
      try {
        const answer = await chat.ask(question, { signal: running.signal });
        renderer.finish(answer, chat.pythonAgent.maxAttempts);
      } catch (error) {
        renderer.stopSpinner();
        if (error instanceof AbortError) {
          io.stdout.write(`${dim('[stopped]', io.stdout)}\n`);
          continue;
        }
        const mapped = toCliExit(error);
        // The chat survives a failed question: the model may be back for the next one.
        io.stderr.write(`${red(mapped instanceof Error ? mapped.message : String(mapped), io.stderr)}\n`);
        if (!(mapped instanceof Error && 'exitCode' in mapped)) throw error;
      } finally {
        running = undefined;
      }
    }
    return EXIT_OK;
  } finally {
    process.off('SIGINT', interrupt);
    reader.close();
    renderer.stopSpinner();
    await chat.close();
  }
}

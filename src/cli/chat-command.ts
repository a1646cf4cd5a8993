/**
 * `sandcell chat`: the data-analysis chat. Reads the data, then answers
 * questions by having the model write Python that runs in a sandbox; `exit`
 * (or end of input) quits. Ctrl-C stops the current question.
 */
import { AbortError } from '../errors.js';
import type { AgentCommandOptions } from './agent-flags.js';
import { openDataChat, toCliExit } from './agent-options.js';
import { AgentRenderer, approvalPrompt, describeChat } from './agent-render.js';
import { EXIT_OK } from './exit-codes.js';
import { LineReader } from './line-reader.js';
import { dim, red } from './render.js';

const QUIT = new Set(['exit', 'quit', ':q']);

export async function chatCommand(options: AgentCommandOptions): Promise<number> {
  const renderer = new AgentRenderer(process.stdout, process.stdout);
  const reader = new LineReader(process.stdin, process.stdout);
  let chat: Awaited<ReturnType<typeof openDataChat>>;
  try {
    chat = await openDataChat(options, {
      onEvent: renderer.onEvent,
      approve: options.approve ? approvalPrompt(reader, renderer, process.stdout) : undefined,
      progress: (text) => renderer.spin(text),
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
    process.stdout.write(`${dim(`${describeChat(chat)}. Ask about the data; "exit" quits.`)}\n`);
    for (;;) {
      const line = await reader.question('> ');
      if (line === undefined) break;
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
          process.stdout.write(`${dim('[stopped]')}\n`);
          continue;
        }
        const mapped = toCliExit(error);
        // The chat survives a failed question: the model may be back for the next one.
        process.stderr.write(`${red(mapped instanceof Error ? mapped.message : String(mapped))}\n`);
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

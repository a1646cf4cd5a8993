/**
 * `sandcell ask "question"`: one question, non-interactive, for scripts. The
 * answer goes to stdout and everything else to stderr; `--json` prints one
 * object with the answer, the code that ran, its outputs and the files saved.
 */
import type { DataAnswer, ExecutionRecord } from '../agents/index.js';
import { SandcellError } from '../errors.js';
import { findImage } from '../protocol/images.js';
import type { AgentCommandOptions } from './agent-flags.js';
import { openDataChat, toCliExit } from './agent-options.js';
import { AgentRenderer, approvalPrompt } from './agent-render.js';
import { type CommandIo, processIo } from './command-io.js';
import { CliExit, EXIT_CODE_ERROR, EXIT_OK } from './exit-codes.js';
import { LineReader } from './line-reader.js';

export interface AskCommandOptions extends AgentCommandOptions {
  json?: boolean;
}

function executionJson(record: ExecutionRecord) {
  const execution = record.execution;
  return {
    code: record.code,
    ...(record.editedCode !== undefined ? { editedCode: record.editedCode } : {}),
    attempt: record.attempt,
    status: record.status,
    ...(execution
      ? {
          stdout: execution.stdout,
          stderr: execution.stderr,
          // Images are files (see `files`); results keep their text only.
          results: execution.results.flatMap((result) =>
            typeof result.data['text/plain'] === 'string' && !findImage(result.data)
              ? [{ type: result.type, text: result.data['text/plain'] }]
              : [],
          ),
          error: execution.error,
          durationMs: execution.durationMs,
          ...(execution.stateLostReason ? { stateLostReason: execution.stateLostReason } : {}),
        }
      : {}),
    files: record.files,
  };
}

export async function askCommand(
  question: string,
  options: AskCommandOptions,
  io: CommandIo = processIo(),
): Promise<number> {
  const json = options.json === true;
  const renderer = new AgentRenderer(io.stderr, io.stdout, false);
  const reader = options.approve ? new LineReader(io.stdin, io.stderr) : undefined;
  let chat: Awaited<ReturnType<typeof openDataChat>> | undefined;
  try {
    if (!question.trim())
      throw new CliExit(2, 'Give a question: sandcell ask "which factors matter most?" --data FILE');
    chat = await openDataChat(options, {
      // JSON mode keeps stdout for the JSON object; progress still shows on a terminal's stderr.
      onEvent: json ? undefined : renderer.onEvent,
      approve: reader ? approvalPrompt(reader, renderer, io.stderr) : undefined,
      progress: (text) => renderer.spin(text),
      backend: io.backend,
    });
    if (json) renderer.spin('working');
    const answer: DataAnswer = await chat.ask(question);
    if (!json) renderer.finish(answer, chat.pythonAgent.maxAttempts);
    renderer.stopSpinner();
    if (json) {
      const model = chat.pythonAgent.model;
      io.stdout.write(
        `${JSON.stringify({
          answer: answer.text,
          stopReason: answer.stopReason,
          steps: answer.steps,
          model: { provider: model?.provider, model: model?.model },
          data: chat.loaded.map(({ preview: _preview, ...file }) => file),
          executions: answer.executions.map(executionJson),
          files: answer.files,
          usage: answer.usage,
        })}\n`,
      );
    }
    return answer.stopReason === 'answer' ? EXIT_OK : EXIT_CODE_ERROR;
  } catch (error) {
    const mapped = toCliExit(error);
    if (json && (mapped instanceof CliExit || error instanceof SandcellError)) {
      const code = error instanceof SandcellError ? error.code : 'usage';
      const message = error instanceof Error ? error.message : String(error);
      io.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
    }
    throw mapped;
  } finally {
    renderer.stopSpinner();
    reader?.close();
    await chat?.close();
  }
}

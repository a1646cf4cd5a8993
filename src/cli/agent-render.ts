/**
 * How chat and ask show an agent at work: a spinner while the model writes or
 * the code runs, the code, its output (trimmed), the files saved, the answer
 * as it streams; and the run / skip / edit prompt of --approve.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AgentAnswer, AgentEvent, ApprovalDecision, ApprovalRequest, DataChat } from '../agents/index.js';
import { findImage } from '../protocol/images.js';
import { formatTraceback } from '../session/execution.js';
import type { LineReader } from './line-reader.js';
import { dim, displayPath, red } from './render.js';
import { type Status, startStatus } from './status.js';

const OUTPUT_LINES = 30;
const OUTPUT_CHARS = 4000;

/** Head and tail of long output, as lines, with a note of what was left out. */
export function trimOutput(text: string, maxLines = OUTPUT_LINES, maxChars = OUTPUT_CHARS): string {
  let lines = text.replace(/\n$/, '').split('\n');
  if (lines.length > maxLines) {
    const head = Math.ceil(maxLines / 2);
    const tail = maxLines - head;
    lines = [...lines.slice(0, head), `… ${lines.length - maxLines} lines not shown …`, ...lines.slice(-tail)];
  }
  const joined = lines.join('\n');
  if (joined.length <= maxChars) return joined;
  const half = Math.floor(maxChars / 2);
  return `${joined.slice(0, half)}\n… ${joined.length - maxChars} characters not shown …\n${joined.slice(-half)}`;
}

export class AgentRenderer {
  private status?: Status;
  private answerOpen = false;
  private readonly outputs = new Map<string, string>();

  /**
   * `log` gets code, output and notes; `answer` the answer text; the spinner goes to stderr.
   * Without `stream`, the answer is written whole at the end (so stdout holds only the answer) and
   * what the model says alongside its tool calls goes to `log`.
   */
  constructor(
    private readonly log: NodeJS.WriteStream,
    private readonly answer: NodeJS.WriteStream,
    private readonly stream = true,
  ) {}

  spin(text: string): void {
    this.status?.stop();
    this.status = startStatus(process.stderr, text);
  }

  stopSpinner(): void {
    this.status?.stop();
    this.status = undefined;
  }

  private endAnswerLine(): void {
    if (this.answerOpen) this.answer.write('\n');
    this.answerOpen = false;
  }

  private note(text: string): void {
    this.log.write(`${dim(text, this.log)}\n`);
  }

  readonly onEvent = (event: AgentEvent): void => {
    switch (event.type) {
      case 'step-start':
        this.spin('writing code');
        break;
      case 'answer-delta':
        if (!this.stream) break;
        this.stopSpinner();
        this.answer.write(event.text);
        this.answerOpen = true;
        break;
      case 'step-end':
        this.stopSpinner();
        this.endAnswerLine();
        if (!this.stream && event.response.toolCalls.length > 0 && event.response.text.trim()) {
          this.log.write(`${event.response.text.trim()}\n`);
        }
        break;
      case 'code-ready':
        this.stopSpinner();
        // A shell command reads as one typed at a prompt.
        this.log.write(
          event.language === 'shell'
            ? `${dim(`── shell command (attempt ${event.attempt}/${event.maxAttempts}) ──`, this.log)}\n$ ${event.code.trimEnd()}\n${dim('──', this.log)}\n`
            : `${dim(`── code (attempt ${event.attempt}/${event.maxAttempts}) ──`, this.log)}\n${event.code.trimEnd()}\n${dim('──', this.log)}\n`,
        );
        break;
      case 'execution-start':
        if (event.edited) {
          const shell = event.language === 'shell';
          this.log.write(
            `${dim(shell ? '── edited command ──' : '── edited code ──', this.log)}\n${shell ? '$ ' : ''}${event.code.trimEnd()}\n${dim('──', this.log)}\n`,
          );
        }
        this.spin(
          `${event.language === 'shell' ? 'running command' : 'running code'} (attempt ${event.attempt}/${event.maxAttempts})`,
        );
        break;
      case 'stdout-delta':
      case 'stderr-delta':
        this.outputs.set(event.callId, (this.outputs.get(event.callId) ?? '') + event.text);
        break;
      case 'execution-end': {
        this.stopSpinner();
        const output = this.outputs.get(event.callId) ?? '';
        this.outputs.delete(event.callId);
        if (output) this.log.write(`${trimOutput(output)}\n`);
        for (const result of event.execution.results) {
          const plain = result.data['text/plain'];
          if (!findImage(result.data) && typeof plain === 'string') this.log.write(`${trimOutput(plain)}\n`);
        }
        if (event.execution.error)
          this.log.write(`${red(trimOutput(formatTraceback(event.execution.error)), this.log)}\n`);
        if (event.execution.stateLostReason) this.note(event.execution.stateLostReason);
        for (const file of event.files) {
          this.note(
            file.savedTo
              ? `[${file.kind} saved to ${displayPath(file.savedTo)}]`
              : `[${file.kind} /mnt/data/${file.path}]`,
          );
        }
        break;
      }
      case 'execution-skipped':
        this.note(
          event.reason === 'declined' ? '[skipped: the model is told you declined]' : '[not run: no attempts left]',
        );
        break;
      case 'file-loaded': {
        const shape =
          event.file.rows !== undefined ? ` (${event.file.rows} rows × ${event.file.columns?.length} columns)` : '';
        const from = event.file.hostPath ? `${displayPath(event.file.hostPath)} → ` : '';
        this.note(`loaded ${from}${event.file.sessionPath}${shape}`);
        break;
      }
      default:
        break;
    }
  };

  /** Notes after the answer when the agent stopped short. */
  finish(answer: AgentAnswer, maxAttempts: number): void {
    this.stopSpinner();
    this.endAnswerLine();
    if (!this.stream) this.answer.write(`${answer.text.trimEnd()}\n`);
    if (answer.stopReason === 'gave-up') this.note(`[gave up: the code failed ${maxAttempts} times in a row]`);
    if (answer.stopReason === 'max-steps') this.note('[stopped at the step limit (--max-steps)]');
  }
}

/** The --approve prompt: run, skip or edit each piece of code. */
export function approvalPrompt(
  reader: LineReader,
  renderer: AgentRenderer,
  output: NodeJS.WriteStream,
): (request: ApprovalRequest) => Promise<ApprovalDecision> {
  return async (request) => {
    renderer.stopSpinner();
    for (;;) {
      const what = request.language === 'shell' ? 'command' : 'code';
      const reply = await reader.question(`Run this ${what}? [r]un, [s]kip, [e]dit: `);
      if (reply === undefined) return { action: 'skip', reason: 'no answer (end of input)' };
      const choice = reply.trim().toLowerCase();
      if (choice === 'r' || choice === 'run' || choice === 'y' || choice === 'yes') return { action: 'run' };
      if (choice === 's' || choice === 'skip' || choice === 'n' || choice === 'no') return { action: 'skip' };
      if (choice === 'e' || choice === 'edit') {
        const code = await editCode(reader, output, request.code, request.language === 'shell' ? 'sh' : 'py');
        return code === undefined ? { action: 'skip', reason: 'the edit was abandoned' } : { action: 'edit', code };
      }
      output.write('Answer r, s or e.\n');
    }
  };
}

/** In a terminal with $VISUAL or $EDITOR, the editor; otherwise new code typed (or piped) in, ending with a "." line. */
async function editCode(
  reader: LineReader,
  output: NodeJS.WriteStream,
  code: string,
  extension: 'py' | 'sh',
): Promise<string | undefined> {
  const editor = process.env.VISUAL || process.env.EDITOR;
  // The command's own input, not the process's: an editor only when the user types at a terminal.
  if (editor && reader.interface.terminal) {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-edit-'));
    // The extension lets the editor highlight the right language.
    const file = path.join(directory, `code.${extension}`);
    try {
      writeFileSync(file, code);
      reader.interface.pause();
      const result = spawnSync(editor, [file], { stdio: 'inherit', shell: true });
      reader.interface.resume();
      if (result.status !== 0) return undefined;
      const edited = readFileSync(file, 'utf8');
      return edited.trim() ? edited : undefined;
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }
  output.write('Type the code to run; end with a line holding only ".":\n');
  const lines: string[] = [];
  for (;;) {
    const line = await reader.question('');
    if (line === undefined) return undefined;
    if (line === '.') break;
    lines.push(line);
  }
  const edited = lines.join('\n');
  return edited.trim() ? edited : undefined;
}

/** A summary line of what was loaded, for the chat's greeting. */
export function describeChat(chat: DataChat): string {
  const model = chat.pythonAgent.model;
  return `sandcell chat · ${model?.provider} ${model?.model} · session ${chat.session.id}`;
}

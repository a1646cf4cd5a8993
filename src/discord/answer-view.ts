/**
 * One answer as Discord shows it: the model's words, each piece of code it
 * ran (fenced), and what the code printed. Short code and output are shown
 * inline; long ones are shown in part and sent whole as attached files
 * (`code-1.py`, `output-1.txt`), so the channel stays readable.
 */
import type { AgentAnswer, AgentEvent } from '../agents/index.js';
import { findImage } from '../protocol/images.js';
import { formatTraceback } from '../session/execution.js';
import { fenced } from './message-split.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences (colored tracebacks) start with ESC.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
/** Code longer than this (lines or characters) is attached. */
const INLINE_CODE_LINES = 15;
const INLINE_CODE_CHARS = 900;
/** Output longer than this is shown in part and attached whole. */
const INLINE_OUTPUT_LINES = 12;
const INLINE_OUTPUT_CHARS = 700;
/** Output kept for an attached output file. */
const MAX_OUTPUT_FILE_CHARS = 1024 * 1024;

export interface ViewFile {
  name: string;
  bytes: Buffer;
}

type Part = { kind: 'text' | 'note' | 'block'; text: string };

function tooLong(text: string, lines: number, chars: number): boolean {
  return text.length > chars || text.split('\n').length > lines;
}

function head(text: string, lines: number, chars: number): string {
  return text.split('\n').slice(0, lines).join('\n').slice(0, chars);
}

export class AnswerView {
  private readonly parts: Part[] = [];
  private readonly outputs = new Map<string, string>();
  private codeCount = 0;
  private streamed = false;
  /** Long code and output, sent as files with the answer. */
  readonly files: ViewFile[] = [];

  /** A line before the answer, e.g. what an attachment held. */
  note(text: string): void {
    this.parts.push({ kind: 'note', text });
  }

  readonly onEvent = (event: AgentEvent): void => {
    switch (event.type) {
      case 'answer-delta': {
        this.streamed = true;
        const last = this.parts.at(-1);
        if (last?.kind === 'text') last.text += event.text;
        else this.parts.push({ kind: 'text', text: event.text });
        break;
      }
      case 'execution-start':
        this.addCode(event.code, event.language === 'shell');
        break;
      case 'stdout-delta':
      case 'stderr-delta': {
        const sofar = this.outputs.get(event.callId) ?? '';
        if (sofar.length < MAX_OUTPUT_FILE_CHARS) this.outputs.set(event.callId, sofar + event.text);
        break;
      }
      case 'execution-end': {
        let output = this.outputs.get(event.callId) ?? '';
        this.outputs.delete(event.callId);
        for (const result of event.execution.results) {
          const plain = result.data['text/plain'];
          if (!findImage(result.data) && typeof plain === 'string') output += `${output ? '\n' : ''}${plain}`;
        }
        if (event.execution.error) output += `${output ? '\n' : ''}${formatTraceback(event.execution.error)}`;
        if (event.execution.stateLostReason) output += `${output ? '\n' : ''}${event.execution.stateLostReason}`;
        this.addOutput(output.replace(ANSI, '').trimEnd());
        break;
      }
      case 'execution-skipped':
        this.parts.push({
          kind: 'text',
          text: event.reason === 'declined' ? '_(code skipped)_' : '_(not run: no attempts left)_',
        });
        break;
      default:
        break;
    }
  };

  private addCode(code: string, shell: boolean): void {
    this.codeCount += 1;
    const language = shell ? 'bash' : 'python';
    const shown = shell ? `$ ${code.trimEnd()}` : code.trimEnd();
    if (!tooLong(shown, INLINE_CODE_LINES, INLINE_CODE_CHARS)) {
      this.parts.push({ kind: 'block', text: fenced(shown, language) });
      return;
    }
    const name = `code-${this.codeCount}.${shell ? 'sh' : 'py'}`;
    this.files.push({ name, bytes: Buffer.from(code) });
    const lines = shown.split('\n').length;
    this.parts.push({
      kind: 'block',
      text: fenced(`${head(shown, 6, INLINE_CODE_CHARS)}\n# … ${lines} lines in all: see ${name}`, language),
    });
  }

  private addOutput(output: string): void {
    if (!output) return;
    if (!tooLong(output, INLINE_OUTPUT_LINES, INLINE_OUTPUT_CHARS)) {
      this.parts.push({ kind: 'block', text: fenced(output) });
      return;
    }
    const name = `output-${this.codeCount}.txt`;
    this.files.push({ name, bytes: Buffer.from(output.slice(0, MAX_OUTPUT_FILE_CHARS)) });
    this.parts.push({
      kind: 'block',
      text: fenced(`${head(output, 8, INLINE_OUTPUT_CHARS)}\n… (all of it in ${name})`),
    });
  }

  /** Adds the answer's words when they did not stream, and a note when the agent stopped short. */
  finish(answer: AgentAnswer): void {
    if (!this.streamed && answer.text.trim()) this.parts.push({ kind: 'text', text: answer.text.trim() });
    if (answer.stopReason === 'gave-up')
      this.parts.push({ kind: 'text', text: '_(I gave up: the code kept failing.)_' });
    if (answer.stopReason === 'max-steps') this.parts.push({ kind: 'text', text: '_(I stopped at the step limit.)_' });
  }

  /** The answer so far as Discord markdown. */
  render(): string {
    return this.parts
      .map((part) => (part.kind === 'block' ? part.text : part.text.trim()))
      .filter((text) => text !== '')
      .join('\n');
  }
}

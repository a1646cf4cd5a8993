/**
 * What the model is told about one execution: bounded text (head and tail of
 * long output, with a note of what was cut), images and files by name and
 * size, never as base64.
 */
import { formatBytes } from '../protocol/format-bytes.js';
import { findImage } from '../protocol/images.js';
import { type Execution, formatTraceback } from '../session/execution.js';
import type { SessionFile } from './events.js';

export const DEFAULT_TOOL_OUTPUT_CHARS = 8_000;

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences start with ESC.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/** Keeps the head and the tail of `text` within `maxChars`, saying how much was cut in between. */
export function boundText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const note = (cut: number) => `\n[… ${cut} characters cut …]\n`;
  const room = Math.max(0, maxChars - note(text.length).length);
  const head = Math.ceil(room * 0.6);
  const tail = room - head;
  return `${text.slice(0, head)}${note(text.length - head - tail)}${tail > 0 ? text.slice(-tail) : ''}`;
}

/** Width × height of a PNG, read from its IHDR chunk. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  if (bytes.length < 24 || bytes[1] !== 0x50 || bytes[2] !== 0x4e || bytes[3] !== 0x47) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

export interface ReportInput {
  execution: Execution;
  attempt: number;
  maxAttempts: number;
  /** Files the code wrote or changed in /mnt/data, and figures saved there from its results. */
  files: SessionFile[];
  /** Descriptions of the figures, by path (format and pixel size). */
  figureNotes: Map<string, string>;
  /** The user edited the code before it ran: the code that actually ran. */
  editedCode?: string;
  /** Set for a shell command: its exit code, shown instead of an execution counter. */
  exitCode?: number;
  maxChars?: number;
}

export function formatExecutionReport(input: ReportInput): string {
  const { execution } = input;
  const maxChars = input.maxChars ?? DEFAULT_TOOL_OUTPUT_CHARS;
  const share = Math.floor(maxChars / 3);
  const lines: string[] = [];
  if (input.editedCode !== undefined) {
    lines.push(`The user edited the code before running it. The code that ran:\n${boundText(input.editedCode, share)}`);
  }
  const seconds = `${(execution.durationMs / 1000).toFixed(1)} s`;
  // A shell command has no execution counter; its exit code is what the model needs.
  lines.push(
    input.exitCode === undefined
      ? `Status: ${execution.status} (execution ${execution.executionCount}, ${seconds})`
      : `Status: ${execution.status} (exit code ${input.exitCode}, ${seconds})`,
  );
  const stdout = execution.stdout.replace(ANSI, '');
  const stderr = execution.stderr.replace(ANSI, '');
  if (stdout) lines.push(`stdout:\n${boundText(stdout.trimEnd(), share)}`);
  if (stderr) lines.push(`stderr:\n${boundText(stderr.trimEnd(), Math.floor(share / 2))}`);
  for (const result of execution.results) {
    if (findImage(result.data)) continue; // described below, by file
    const plain = result.data['text/plain'];
    const label = result.type === 'execute_result' ? 'Result' : 'Display';
    if (typeof plain === 'string') lines.push(`${label}:\n${boundText(plain, share)}`);
    else lines.push(`${label}: ${Object.keys(result.data).join(', ')} (not shown as text)`);
  }
  const figures = input.files.filter((file) => file.kind === 'figure');
  const written = input.files.filter((file) => file.kind === 'file');
  for (const figure of figures) {
    lines.push(
      `Figure shown to the user, saved as /mnt/data/${figure.path} (${input.figureNotes.get(figure.path) ?? 'image'}, ${formatBytes(figure.size)}).`,
    );
  }
  if (written.length > 0) {
    const shown = written.slice(0, 50).map((file) => `${file.path} (${formatBytes(file.size)})`);
    const more = written.length > 50 ? `, and ${written.length - 50} more` : '';
    lines.push(`Files written to /mnt/data: ${shown.join(', ')}${more}.`);
  }
  if (execution.outputTruncated) lines.push('Note: the output went past the per-execution limit and was cut.');
  if (execution.error) {
    lines.push(`Error:\n${boundText(formatTraceback(execution.error).replace(ANSI, ''), share)}`);
  }
  if (execution.stateLostReason) lines.push(`Note: ${execution.stateLostReason}`);
  if (execution.status !== 'ok') {
    lines.push(
      input.attempt >= input.maxAttempts
        ? `Attempt ${input.attempt} of ${input.maxAttempts} failed, and no attempts are left: do not run more code. Tell the user what went wrong and what they could try.`
        : `Attempt ${input.attempt} of ${input.maxAttempts} failed: read the error, fix the code and run it again.`,
    );
  }
  return boundText(lines.join('\n'), maxChars);
}

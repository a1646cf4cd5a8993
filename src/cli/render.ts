/** Turning an Execution into terminal output and files on disk, for run and repl. */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { FileOperationError } from '../errors.js';
import { writeNewFile } from '../internal/new-file.js';
import { formatSizeFlag } from '../internal/units.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { bufferEncoding, findImage } from '../protocol/images.js';
import type { Execution, ExecutionResult } from '../session/execution.js';
import { formatTraceback } from '../session/execution.js';
import { DEFAULT_OUTPUT_BYTES, DEFAULT_RESULT_BYTES } from '../session/options.js';
import type { Session } from '../session/session.js';

const useColor = (stream: NodeJS.WriteStream): boolean => stream.isTTY === true && !process.env.NO_COLOR;
export const dim = (text: string, stream: NodeJS.WriteStream = process.stdout): string =>
  useColor(stream) ? `\x1b[2m${text}\x1b[0m` : text;
export const red = (text: string, stream: NodeJS.WriteStream = process.stderr): string =>
  useColor(stream) ? `\x1b[31m${text}\x1b[0m` : text;

/** The text a terminal shows for a result: plain text, or a note that an image was saved. */
export function resultText(result: ExecutionResult): string | undefined {
  const plain = result.data['text/plain'];
  return typeof plain === 'string' ? plain : undefined;
}

/** A file the code left in /mnt/data, as saved on the host. */
export interface SavedFile {
  path: string;
  savedTo: string;
  /** Set when a file of the same name was there already, so this one got a number. */
  existing?: string;
  /** With --store: the file's signed read-only link, and when it stops working (ISO 8601)… */
  url?: string;
  expiresAt?: string;
  /** …or why it was not published (the local copy stands). */
  publishError?: string;
}

/**
 * Writes images from results into `directory` as figure-N.ext, N the first
 * free number, so earlier runs' figures are never overwritten. A figure whose
 * bytes are those of a file the code saved itself (`savefig("daily.png")`,
 * then shown) is not written twice: its entry names that file.
 */
export async function saveResultImages(
  execution: Execution,
  directory: string,
  savedFiles: SavedFile[] = [],
): Promise<{ result: ExecutionResult; file: string }[]> {
  const saved: { result: ExecutionResult; file: string }[] = [];
  const digests = await fileDigests(savedFiles);
  for (const result of execution.results) {
    const image = findImage(result.data);
    if (!image) continue;
    const bytes = Buffer.from(image.content, bufferEncoding(image.type));
    const same = digests.get(createHash('sha256').update(bytes).digest('hex'));
    if (same) {
      saved.push({ result, file: same });
      continue;
    }
    await mkdir(directory, { recursive: true });
    const file = await writeNewFile(path.join(directory, `figure-1.${image.type.extension}`), bytes);
    saved.push({ result, file: displayPath(file) });
  }
  return saved;
}

/** Image files' digests → where they were saved (only images can be a figure). */
async function fileDigests(files: SavedFile[]): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  for (const file of files) {
    if (!IMAGE_EXTENSIONS.has(path.extname(file.savedTo).toLowerCase())) continue;
    const content = await readFile(file.savedTo).catch(() => undefined);
    if (content) digests.set(createHash('sha256').update(content).digest('hex'), file.savedTo);
  }
  return digests;
}

const IMAGE_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.gif', '.svg', '.webp']);

/**
 * Copies the files the code left in /mnt/data into `directory`. Names come
 * from the sandbox, so each is validated and must land inside `directory`. A
 * name already taken there gets a number instead (`existing` says which).
 */
export async function copyOutputFiles(
  session: Session,
  directory: string,
  skip: Set<string>,
  onRefused: (path: string, reason: string) => void = () => undefined,
): Promise<SavedFile[]> {
  const copied: SavedFile[] = [];
  for (const entry of await session.files.list('', { recursive: true })) {
    if (entry.type !== 'file' || skip.has(entry.path)) continue;
    const target = await session.files.saveTo(entry.path, directory);
    if (!target) {
      // Why it could not be copied (over --max-upload, a link the code planted…), asked only when it failed.
      const failure = await session.files.read(entry.path).then(
        () => undefined,
        (error: Error) => error,
      );
      if (failure instanceof FileOperationError) onRefused(entry.path, failure.message);
      continue;
    }
    const intended = path.resolve(directory, entry.path);
    copied.push({
      path: entry.path,
      savedTo: displayPath(target),
      ...(target === intended ? {} : { existing: displayPath(intended) }),
    });
  }
  return copied;
}

/** Says on stderr that a file the code left was not saved, and why. */
export function printRefused(path: string, reason: string): void {
  process.stderr.write(`${dim(`[file not saved: ${path}: ${reason}]`, process.stderr)}\n`);
}

/** The line a saved file gets, saying so when it did not take its own name, and its link when published. */
export function savedFileLine(file: SavedFile): string {
  return file.existing
    ? `[file saved to ${file.savedTo}: ${file.existing} already existed and was kept${linkNote(file)}]`
    : `[file saved to ${file.savedTo}${linkNote(file)}]`;
}

/** What a line says of a file published with --store: its link and until when, or why it has none. */
function linkNote(file: SavedFile | undefined): string {
  if (file?.url) return `; link: ${file.url} (works until ${file.expiresAt})`;
  if (file?.publishError) return `; ${file.publishError}`;
  return '';
}

/**
 * The line an image result gets: where it was saved. When it is a file the code saved itself
 * (`savefig("daily.png")`), this is that file's only line, so it says what the file line would
 * have said about a name already taken.
 */
export function savedImageLine(image: { file: string }, files: SavedFile[]): string {
  const file = files.find((candidate) => candidate.savedTo === image.file);
  return file?.existing
    ? `[image saved to ${image.file}: ${file.existing} already existed and was kept${linkNote(file)}]`
    : `[image saved to ${image.file}${linkNote(file)}]`;
}

/** Files to list after the output: those not already named by an image line. */
export function filesNotShown(files: SavedFile[], images: { file: string }[]): SavedFile[] {
  const shown = new Set(images.map((image) => image.file));
  return files.filter((file) => !shown.has(file.savedTo));
}

/** A flag value a few times `bytes`, for the example in a note. */
const raised = (bytes: number): string => formatSizeFlag(4 * bytes);

/**
 * Which per-execution limit cut an execution's output, and the flag that raises it: stdout and
 * stderr together (an error's value and traceback too) within --max-output, results within
 * --max-results. The kernel keeps printed output up to the byte, so output that reached its limit
 * (less a character's bytes) is what was cut.
 */
export function executionCutNote(
  execution: Pick<Execution, 'stdout' | 'stderr' | 'error'>,
  limits: { outputBytes?: number; resultBytes?: number } = {},
): string {
  const outputBytes = limits.outputBytes ?? DEFAULT_OUTPUT_BYTES;
  const resultBytes = limits.resultBytes ?? DEFAULT_RESULT_BYTES;
  const printed = Buffer.byteLength(execution.stdout) + Buffer.byteLength(execution.stderr);
  const error = execution.error ? [execution.error.value, ...execution.error.traceback].join('\n') : '';
  if (printed >= outputBytes - 3 || error.includes('[sandcell cut ')) {
    return `[output was cut at ${formatBytes(outputBytes)}, what an execution keeps of stdout and stderr; raise it with --max-output (e.g. --max-output ${raised(outputBytes)})]`;
  }
  return `[results were cut at ${formatBytes(resultBytes)}, what an execution keeps of results (charts, tables); raise it with --max-results (e.g. --max-results ${raised(resultBytes)})]`;
}

/** The note for a command whose output was cut: it keeps --max-output of stdout, and as much of stderr. */
export function commandCutNote(outputBytes = DEFAULT_OUTPUT_BYTES): string {
  return `[output was cut at ${formatBytes(outputBytes)}, what a command keeps of its stdout and of its stderr; raise it with --max-output (e.g. --max-output ${raised(outputBytes)})]`;
}

/** A path relative to the working directory when it is inside it, else absolute. */
export function displayPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : path.resolve(file);
}

export function printError(execution: Execution): void {
  if (execution.error) process.stderr.write(`${red(formatTraceback(execution.error))}\n`);
}

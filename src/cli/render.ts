/** Turning an Execution into terminal output and files on disk, for run and repl. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bufferEncoding, findImage } from '../protocol/images.js';
import type { Execution, ExecutionResult } from '../session/execution.js';
import { formatTraceback } from '../session/execution.js';
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

/**
 * Writes images from results into `directory` as figure-N.ext, N the first
 * free number, so earlier runs' figures are never overwritten.
 */
export async function saveResultImages(
  execution: Execution,
  directory: string,
): Promise<{ result: ExecutionResult; file: string }[]> {
  const saved: { result: ExecutionResult; file: string }[] = [];
  let index = 0;
  for (const result of execution.results) {
    const image = findImage(result.data);
    if (!image) continue;
    await mkdir(directory, { recursive: true });
    const bytes = Buffer.from(image.content, bufferEncoding(image.type));
    for (;;) {
      index += 1;
      const file = path.join(directory, `figure-${index}.${image.type.extension}`);
      try {
        await writeFile(file, bytes, { flag: 'wx' });
        saved.push({ result, file: displayPath(file) });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  }
  return saved;
}

/**
 * Copies the files the code left in /mnt/data into `directory`. Names come
 * from the sandbox, so each is validated and must land inside `directory`.
 */
export async function copyOutputFiles(
  session: Session,
  directory: string,
  skip: Set<string>,
): Promise<{ path: string; savedTo: string }[]> {
  const copied: { path: string; savedTo: string }[] = [];
  for (const entry of await session.files.list('', { recursive: true })) {
    if (entry.type !== 'file' || skip.has(entry.path)) continue;
    const target = await session.files.saveTo(entry.path, directory);
    if (target) copied.push({ path: entry.path, savedTo: displayPath(target) });
  }
  return copied;
}

/** A path relative to the working directory when it is inside it, else absolute. */
export function displayPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : path.resolve(file);
}

export function printError(execution: Execution): void {
  if (execution.error) process.stderr.write(`${red(formatTraceback(execution.error))}\n`);
}

/**
 * A conversation as a Jupyter notebook (nbformat 4.5): questions, the model's
 * words and uploads as markdown cells; the code that ran (the model's and the
 * user's cells) as code cells with their outputs, images embedded: the charts
 * it displayed, and the images it saved as files (read from the session when
 * exported, as the web UI shows them), then the files it wrote. The notebook's
 * kernel is Python; a cell in another language says which in its metadata.
 */

import { formatBytes } from '../../protocol/format-bytes.js';
import { imageType } from '../../protocol/images.js';
import type { CodeFile, CodeStep, PresentedResult, Turn } from '../../protocol/index.js';
import {
  MAX_SAVED_IMAGE_BYTES,
  MAX_SAVED_IMAGES_PER_STEP,
  savedImages,
  savedImageType,
} from '../../protocol/saved-images.js';
import type { StoredImage } from '../core/image-store.js';
import { exportFileName } from './title.js';

type Output = Record<string, unknown>;
type Cell = Record<string, unknown>;

export interface NotebookSource {
  id: string;
  title: string;
  turns: readonly Turn[];
  /** The stored image behind a result's image URL, if still kept. */
  image(url: string): StoredImage | undefined;
  /** Reads a file of the conversation's /mnt/data; absent once its session is gone. */
  readFile?: (path: string) => Promise<Buffer>;
}

/**
 * The most bytes of saved images one export embeds (each is at most
 * MAX_SAVED_IMAGE_BYTES, as the web UI shows them); past it, a cell says which
 * were left out. The charts the code displayed are bounded by the history.
 */
export const MAX_EXPORTED_SAVED_IMAGE_BYTES = 32 * 1024 * 1024;

/** Reads the saved images for one export, within its budget. */
class SavedImageReader {
  private spent = 0;

  constructor(private readonly readFile: NotebookSource['readFile']) {}

  /** The image's output, or a line saying why it is not there. */
  async output(file: CodeFile): Promise<Output> {
    const type = savedImageType(file.path)!;
    const note = (why: string): Output => ({
      output_type: 'display_data',
      data: { 'text/plain': [`[/mnt/data/${file.path}: ${why}]`] },
      metadata: { sandcell: { file: file.path } },
    });
    if (!this.readFile) return note('the session that saved this image has ended, and the image with it');
    const overBudget = (size: number) => this.spent + size > MAX_EXPORTED_SAVED_IMAGE_BYTES;
    const spentNote = () =>
      note(`not embedded: this export already holds ${formatBytes(MAX_EXPORTED_SAVED_IMAGE_BYTES)} of saved images`);
    if (overBudget(file.size)) return spentNote(); // not even read
    let data: Buffer;
    try {
      data = await this.readFile(file.path);
    } catch (error) {
      return note(`could not be read for this export (${(error as Error).message})`);
    }
    // The file may have been rewritten since the step wrote it.
    if (data.length > MAX_SAVED_IMAGE_BYTES) {
      return note(`now ${formatBytes(data.length)}, over ${formatBytes(MAX_SAVED_IMAGE_BYTES)}: not embedded`);
    }
    if (overBudget(data.length)) return spentNote();
    this.spent += data.length;
    return {
      output_type: 'display_data',
      data: {
        [type.mimeType]: type.encoding === 'text' ? lines(data.toString('utf8')) : data.toString('base64'),
        'text/plain': [`[image saved as /mnt/data/${file.path}]`],
      },
      metadata: { sandcell: { file: file.path } },
    };
  }
}

/** The files a step wrote, as the web UI lists them under the step; images not shown say why. */
function filesWritten(files: readonly CodeFile[], shown: readonly CodeFile[]): Output {
  const described = files.map((file) => {
    const facts = [formatBytes(file.size)];
    if (file.kind === 'figure') facts.push('figure');
    else if (savedImageType(file.path) && !shown.includes(file)) {
      facts.push(
        file.size > MAX_SAVED_IMAGE_BYTES
          ? `not embedded: over ${formatBytes(MAX_SAVED_IMAGE_BYTES)}`
          : `not embedded: a step shows its first ${MAX_SAVED_IMAGES_PER_STEP} images`,
      );
    }
    return { path: file.path, facts: facts.join(', ') };
  });
  return {
    output_type: 'display_data',
    data: {
      'text/markdown': lines(
        `**Files written** in /mnt/data:\n\n${described.map((file) => `- \`${file.path}\` (${file.facts})`).join('\n')}\n`,
      ),
      'text/plain': lines(
        `Files written in /mnt/data:\n${described.map((file) => `  ${file.path} (${file.facts})`).join('\n')}\n`,
      ),
    },
    metadata: { sandcell: { files: files.map((file) => ({ path: file.path, size: file.size, kind: file.kind })) } },
  };
}

/** Text past this many characters stays one string (nbformat allows it): a list of millions of lines would not fit in memory. */
const MAX_LISTED_CHARS = 64 * 1024;

/** Text as nbformat's multiline string: a list of lines, each keeping its newline, or one string when long. */
function lines(text: string): string[] | string {
  if (text.length > MAX_LISTED_CHARS) return text;
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function cellId(base: string, index: number): string {
  return `${base.replace(/[^A-Za-z0-9-_]/g, '').slice(0, 40)}-${index}`;
}

function markdown(id: string, text: string): Cell {
  return { cell_type: 'markdown', id, metadata: {}, source: lines(text) };
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

function resultOutput(result: PresentedResult, executionCount: number | null, source: NotebookSource): Output {
  const data: Record<string, unknown> = {};
  for (const [mimeType, value] of Object.entries(result.data)) {
    data[mimeType] = typeof value === 'string' && mimeType.startsWith('text/') ? lines(value) : value;
  }
  for (const link of result.images ?? []) {
    const image = source.image(link.url);
    if (!image) {
      data['text/plain'] ??= [`[${link.mimeType} image no longer kept by the server]`];
      continue;
    }
    // A notebook carries images as bundles do: text as its lines, binary as base64.
    data[link.mimeType] =
      imageType(link.mimeType)?.encoding === 'text'
        ? lines(image.data.toString('utf8'))
        : image.data.toString('base64');
  }
  return result.type === 'execute_result'
    ? { output_type: 'execute_result', execution_count: executionCount, data, metadata: result.metadata }
    : { output_type: 'display_data', data, metadata: result.metadata };
}

async function codeCell(id: string, step: CodeStep, source: NotebookSource, reader: SavedImageReader): Promise<Cell> {
  const outputs: Output[] = [];
  if (step.stdout) outputs.push({ output_type: 'stream', name: 'stdout', text: lines(step.stdout) });
  if (step.stderr) outputs.push({ output_type: 'stream', name: 'stderr', text: lines(step.stderr) });
  const executionCount = step.execution?.executionCount ?? null;
  for (const result of step.results) outputs.push(resultOutput(result, executionCount, source));
  const shown = savedImages(step.files);
  for (const file of shown) outputs.push(await reader.output(file));
  if (step.files.length > 0) outputs.push(filesWritten(step.files, shown));
  const error = step.execution?.error;
  if (error) outputs.push({ output_type: 'error', ename: error.name, evalue: error.value, traceback: error.traceback });
  const code = step.ranCode ?? step.code;
  const skipped = step.status === 'skipped';
  return {
    cell_type: 'code',
    id,
    execution_count: skipped ? null : executionCount,
    metadata: {
      sandcell: {
        status: step.status,
        ...(step.skipReason ? { skipReason: step.skipReason } : {}),
        ...(step.ranCode ? { modelCode: step.code } : {}),
        attempt: step.attempt,
        ...(step.language ? { language: step.language } : {}),
      },
      // Editors that mix languages in one notebook (VS Code) read a cell's language here.
      ...(step.language ? { vscode: { languageId: step.language } } : {}),
    },
    source: lines(skipped ? `# Not run (${step.skipReason ?? 'skipped'}).\n${code}` : code),
    outputs,
  };
}

function uploadNote(turn: Turn): string {
  const files = turn.files ?? [];
  const described = files.map((file) => {
    const shape = file.rows !== undefined ? `, ${file.rows} rows × ${file.columns?.length ?? 0} columns` : '';
    return `- \`/mnt/data/${file.path}\` (${file.size} bytes${shape})`;
  });
  return `**Files added** (the code reads them from /mnt/data; put them there to rerun this notebook):\n\n${described.join('\n')}`;
}

export async function conversationNotebook(
  source: NotebookSource,
  exportedAt = new Date(),
): Promise<Record<string, unknown>> {
  const cells: Cell[] = [markdown(cellId('title', 0), `# ${source.title}\n\nExported from sandcell.`)];
  const reader = new SavedImageReader(source.readFile);
  let index = 1;
  for (const turn of source.turns) {
    if (turn.resumed) {
      cells.push(markdown(cellId(turn.id, index++), `*The session resumed from a pause: ${turn.resumed.message}*`));
    }
    if (turn.kind === 'upload') cells.push(markdown(cellId(turn.id, index++), uploadNote(turn)));
    if (turn.kind === 'message')
      cells.push(markdown(cellId(turn.id, index++), `**Question:**\n\n${quote(turn.input)}`));
    for (const step of turn.steps) {
      if (step.type === 'code') cells.push(await codeCell(cellId(turn.id, index++), step, source, reader));
      else if (step.text.trim()) cells.push(markdown(cellId(turn.id, index++), step.text));
    }
    if (turn.error) {
      cells.push(markdown(cellId(turn.id, index++), `*The turn failed: ${turn.error.message}*`));
    } else if (turn.status === 'cancelled') {
      cells.push(markdown(cellId(turn.id, index++), '*Stopped by the user.*'));
    }
  }
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' },
      language_info: { name: 'python' },
      sandcell: { conversation: source.id, title: source.title, exportedAt: exportedAt.toISOString() },
    },
    cells,
  };
}

/**
 * The notebook as JSON (indented by one space, as Jupyter writes it), built a
 * cell at a time into bytes, so no single string ever holds the whole export.
 */
export function notebookBytes(notebook: Record<string, unknown>): Buffer {
  const { cells, ...rest } = notebook as { cells: Cell[] } & Record<string, unknown>;
  const parts: Buffer[] = [Buffer.from('{\n "cells": [')];
  cells.forEach((cell, index) => {
    // JSON text never holds a raw newline inside a string, so re-indenting line by line is safe.
    parts.push(Buffer.from(`${index === 0 ? '' : ','}\n  ${JSON.stringify(cell, null, 1).replace(/\n/g, '\n  ')}`));
  });
  parts.push(Buffer.from(`\n ],${JSON.stringify(rest, null, 1).slice(1)}`));
  return Buffer.concat(parts);
}

/** A file name for the download: the title's words, short and safe (see exportFileName). */
export function notebookFileName(title: string): string {
  return exportFileName(title, 'ipynb');
}

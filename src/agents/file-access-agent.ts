/**
 * FileAccessAgent: the only part of sandcell that reads host files, and only
 * through its predefined tool `safe_file_access`, limited to the data roots
 * the user named. It copies the file into the session's /mnt/data and gives
 * back the preview the model needs (columns, dtypes, row count, first rows).
 * It never runs code: it holds the session's files, not its interpreter.
 */
import { z } from 'zod';
import type { SessionFiles } from '../session/files.js';
import { Agent, type AgentOptions } from './agent.js';
import { type DataPreview, previewData } from './data-preview.js';
import {
  type DataRoot,
  DEFAULT_MAX_FILE_BYTES,
  locateForModel,
  locateForUser,
  readDataFile,
  resolveDataRoots,
} from './data-roots.js';
import type { LoadedFileSummary } from './events.js';
import { defineTool } from './tool.js';

export const SAFE_FILE_ACCESS = 'safe_file_access';

export const DEFAULT_FILE_ACCESS_INSTRUCTIONS = `You prepare data files for analysis.
When the user names a file, call ${SAFE_FILE_ACCESS} with its name (relative to the shared data, never an absolute path).
Then summarise, in a few sentences, what the file holds: its shape, its columns and their types, anything odd in the first rows.`;

/** Rows of a table shown in a file's preview to people. */
export const HEAD_ROWS = 10;

export interface LoadedFile extends LoadedFileSummary {
  /** The context for the model: the preview text. */
  preview: string;
  /** For tables: the first rows (cells as text), for a UI. */
  head?: { columns: string[]; rows: string[][] };
}

export interface FileAccessAgentOptions extends Omit<AgentOptions, 'instructions' | 'tools'> {
  /** Files and directories the user shared (host paths). */
  dataRoots: readonly string[];
  /** Where files go: the session's /mnt/data. */
  files: Pick<SessionFiles, 'write'>;
  /** Largest file read. @default 64 MiB */
  maxFileBytes?: number;
  /** @default DEFAULT_FILE_ACCESS_INSTRUCTIONS */
  instructions?: string;
}

export class FileAccessAgent extends Agent {
  /** Every file copied into the session so far. */
  readonly loaded: LoadedFile[] = [];
  private roots?: Promise<DataRoot[]>;
  private readonly options: FileAccessAgentOptions;

  constructor(options: FileAccessAgentOptions) {
    super({
      ...options,
      name: options.name ?? 'files',
      instructions: options.instructions ?? DEFAULT_FILE_ACCESS_INSTRUCTIONS,
    });
    this.options = options;
    this.tools.add(
      defineTool({
        name: SAFE_FILE_ACCESS,
        description:
          'Copies a data file the user shared into the analysis sandbox (/mnt/data) and returns its preview: columns, dtypes, row count and first 15 rows for CSV, TSV and JSON; size and first lines or bytes for other files. Only files under the shared data can be read.',
        parameters: z.object({
          path: z
            .string()
            .min(1)
            .describe('The file name, relative to the shared data (e.g. "sales.csv" or "2024/march.csv").'),
        }),
        run: async ({ path }) => (await this.loadFor(path, 'model')).preview,
      }),
    );
  }

  /** The data roots, checked once. */
  dataRoots(): Promise<DataRoot[]> {
    this.roots ??= resolveDataRoots(this.options.dataRoots);
    return this.roots;
  }

  /** Loads a file the user named (a host path under a data root) without asking the model. */
  load(hostPath: string): Promise<LoadedFile> {
    return this.loadFor(hostPath, 'user');
  }

  private async loadFor(requested: string, who: 'user' | 'model'): Promise<LoadedFile> {
    const roots = await this.dataRoots();
    const located = who === 'model' ? await locateForModel(roots, requested) : locateForUser(roots, requested);
    const file = await readDataFile(located, this.options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES);
    return this.record(file.name, file.bytes, file.hostPath);
  }

  /** Copies bytes the user handed over (not a host file: e.g. an upload) into the session and previews them. */
  share(name: string, bytes: Buffer): Promise<LoadedFile> {
    return this.record(name, bytes);
  }

  private async record(name: string, bytes: Buffer, hostPath?: string): Promise<LoadedFile> {
    await this.options.files.write(name, bytes);
    this.emit({ type: 'file-written', sessionPath: `/mnt/data/${name}`, size: bytes.length });
    const preview: DataPreview = await previewData(name, bytes);
    const loaded: LoadedFile = {
      ...(hostPath !== undefined ? { hostPath } : {}),
      sessionPath: `/mnt/data/${name}`,
      size: bytes.length,
      format: preview.format,
      ...(preview.table
        ? {
            rows: preview.rowCount,
            columns: preview.table.columns.map((column, i) => ({ name: column, dtype: preview.table!.dtypes[i]! })),
            head: { columns: preview.table.columns, rows: preview.table.rows.slice(0, HEAD_ROWS) },
          }
        : {}),
      preview: preview.text,
    };
    const previous = this.loaded.findIndex((item) => item.sessionPath === loaded.sessionPath);
    if (previous >= 0) this.loaded.splice(previous, 1);
    this.loaded.push(loaded);
    const { preview: _text, head: _head, ...summary } = loaded;
    this.emit({ type: 'file-loaded', file: summary });
    return loaded;
  }
}

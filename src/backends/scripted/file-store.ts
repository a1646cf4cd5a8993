/**
 * The scripted backend's /mnt/data: files in memory, kept on the volume so
 * they outlive kernel restarts as the spec asks. Failures carry the reason
 * codes the real kernel sends (`not-found`, `not-a-file`, …).
 */

export interface ScriptedFileEntry {
  path: string;
  type: 'file' | 'directory';
  size: number;
  modifiedMs: number;
}

/** A refused file operation, with the kernel's reason code. */
export class ScriptedFileError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

interface StoredFile {
  data: Buffer;
  modifiedMs: number;
}

export class ScriptedFileStore {
  private readonly files = new Map<string, StoredFile>();
  /** Directories made explicitly or as parents; the root ('') always exists. */
  private readonly directories = new Set<string>(['']);

  /** Writes (creating parent directories, replacing any file) `data` at `path`. */
  write(path: string, data: Buffer | string): void {
    if (path === '' || this.directories.has(path))
      throw new ScriptedFileError('is-a-directory', `${path} is a directory`);
    const parts = path.split('/');
    for (let index = 1; index < parts.length; index++) {
      const parent = parts.slice(0, index).join('/');
      if (this.files.has(parent)) throw new ScriptedFileError('not-a-directory', `${parent} is not a directory`);
      this.directories.add(parent);
    }
    this.files.set(path, { data: Buffer.from(data), modifiedMs: Date.now() });
  }

  /** A piece written at `offset`: 0 writes the file anew, a later piece must start where it ends. */
  writeChunk(path: string, offset: number, data: Buffer): number {
    if (offset === 0) {
      this.write(path, data);
      return data.length;
    }
    const file = this.file(path);
    if (file.data.length !== offset) {
      throw new ScriptedFileError(
        'changed',
        `${path} is ${file.data.length} bytes, not the ${offset} written so far: something else wrote to it; write it again`,
      );
    }
    this.files.set(path, { data: Buffer.concat([file.data, data]), modifiedMs: Date.now() });
    return offset + data.length;
  }

  read(path: string): Buffer {
    return Buffer.from(this.file(path).data);
  }

  /** Up to `bytes` of the file at `path` from `offset`, with its size and modification time. */
  readChunk(path: string, offset: number, bytes: number): { data: Buffer; size: number; modifiedNs: number } {
    const file = this.file(path);
    return {
      data: Buffer.from(file.data.subarray(offset, offset + bytes)),
      size: file.data.length,
      modifiedNs: file.modifiedMs * 1_000_000,
    };
  }

  private file(path: string): StoredFile {
    if (path === '' || this.directories.has(path))
      throw new ScriptedFileError('is-a-directory', `${path} is a directory`);
    const file = this.files.get(path);
    if (!file) throw new ScriptedFileError('not-found', `no such file: ${path}`);
    return file;
  }

  list(path = '', options: { recursive?: boolean } = {}): ScriptedFileEntry[] {
    if (this.files.has(path)) throw new ScriptedFileError('not-a-directory', `${path} is not a directory`);
    if (!this.directories.has(path)) throw new ScriptedFileError('not-found', `no such directory: ${path}`);
    const prefix = path === '' ? '' : `${path}/`;
    const entries: ScriptedFileEntry[] = [];
    const within = (name: string) => name.startsWith(prefix) && name !== path;
    const direct = (name: string) => !name.slice(prefix.length).includes('/');
    for (const name of this.directories) {
      if (within(name) && (options.recursive || direct(name))) {
        entries.push({ path: name, type: 'directory', size: 0, modifiedMs: 0 });
      }
    }
    for (const [name, file] of this.files) {
      if (within(name) && (options.recursive || direct(name))) {
        entries.push({ path: name, type: 'file', size: file.data.length, modifiedMs: file.modifiedMs });
      }
    }
    return entries.sort((left, right) => left.path.localeCompare(right.path));
  }

  /** Removes a file or a directory with everything in it. */
  remove(path: string): void {
    if (path === '') throw new ScriptedFileError('invalid-path', 'refusing to remove /mnt/data itself');
    if (this.files.delete(path)) return;
    if (!this.directories.has(path)) throw new ScriptedFileError('not-found', `no such file: ${path}`);
    const prefix = `${path}/`;
    this.directories.delete(path);
    for (const name of [...this.directories]) if (name.startsWith(prefix)) this.directories.delete(name);
    for (const name of [...this.files.keys()]) if (name.startsWith(prefix)) this.files.delete(name);
  }

  /** Every file, path → bytes: what a snapshot's archive holds. */
  dump(): Map<string, Buffer> {
    return new Map([...this.files].map(([name, file]) => [name, Buffer.from(file.data)]));
  }

  /** Every file and directory removed: a restore starts from nothing. */
  clear(): void {
    this.files.clear();
    this.directories.clear();
    this.directories.add('');
  }
}

/**
 * Tells which files in /mnt/data are new or changed since it last looked:
 * it remembers each file's size and modification time.
 */
import type { FileEntry, SessionFiles } from './files.js';

const stampOf = (entry: FileEntry): string => `${entry.size}:${entry.modifiedMs}`;

export class FileChanges {
  private readonly known = new Map<string, string>();
  private snapshotTaken = false;

  constructor(private readonly files: Pick<SessionFiles, 'list'>) {}

  /** Remembers what /mnt/data holds now (once: later calls do nothing). */
  async snapshot(): Promise<void> {
    if (this.snapshotTaken) return;
    for (const entry of await this.files.list('', { recursive: true })) {
      if (entry.type === 'file') this.known.set(entry.path, stampOf(entry));
    }
    this.snapshotTaken = true;
  }

  /** Files new or changed since the last look, now remembered as they are. */
  async changed(): Promise<FileEntry[]> {
    const changed: FileEntry[] = [];
    for (const entry of await this.files.list('', { recursive: true })) {
      if (entry.type !== 'file' || this.known.get(entry.path) === stampOf(entry)) continue;
      this.known.set(entry.path, stampOf(entry));
      changed.push(entry);
    }
    return changed;
  }

  has(path: string): boolean {
    return this.known.has(path);
  }

  /** Forgets a file, so the next look reports it again (a publish that failed is tried again). */
  forget(path: string): void {
    this.known.delete(path);
  }

  /** Remembers a file written on purpose (so it is not reported as changed). */
  async remember(path: string): Promise<void> {
    const directory = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    const entry = (await this.files.list(directory)).find((candidate) => candidate.path === path);
    this.known.set(path, entry ? stampOf(entry) : 'written');
  }
}

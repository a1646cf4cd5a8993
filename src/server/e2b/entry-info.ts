/**
 * envd's EntryInfo from the session's file listing. The supervisor reports type,
 * size and modification time; mode, permissions and owner are the ones every
 * file the sandbox's user writes in /home/user has (it is that user's directory).
 */
import type { FileEntry } from '../../session/files.js';
import { type SandboxPath, sandboxPathOf } from './envd-paths.js';

const FILE_TYPES: Record<FileEntry['type'], string> = {
  file: 'FILE_TYPE_FILE',
  directory: 'FILE_TYPE_DIRECTORY',
  symlink: 'FILE_TYPE_SYMLINK',
  other: 'FILE_TYPE_UNSPECIFIED',
};

const MODES = {
  directory: { mode: 0o755, permissions: 'drwxr-xr-x' },
  file: { mode: 0o644, permissions: '-rw-r--r--' },
};

export function entryInfo(root: SandboxPath['root'], entry: FileEntry) {
  const name =
    entry.path === '' ? root.slice(root.lastIndexOf('/') + 1) : entry.path.slice(entry.path.lastIndexOf('/') + 1);
  const { mode, permissions } = entry.type === 'directory' ? MODES.directory : MODES.file;
  return {
    name,
    type: FILE_TYPES[entry.type],
    path: sandboxPathOf(root, entry.path),
    size: String(entry.size),
    mode,
    permissions,
    owner: 'user',
    group: 'user',
    modifiedTime: new Date(entry.modifiedMs).toISOString(),
  };
}

/** The session's files directory itself, which the listing does not describe. */
export function rootEntry(root: SandboxPath['root']) {
  return entryInfo(root, { path: '', type: 'directory', size: 0, modifiedMs: Date.now() });
}

/**
 * Where sandcell keeps what outlives a process (conversation histories,
 * snapshots, the snapshot secret): one state directory, shared by the server
 * and the library.
 */
import os from 'node:os';
import path from 'node:path';

/** The word that keeps state in memory only (like `--preload none`). */
export const NO_STATE_DIRECTORY = 'none';

/** `$SANDCELL_STATE_DIR` (false for `none`), else `$XDG_DATA_HOME/sandcell`, else `~/.local/share/sandcell`. */
export function defaultStateDirectory(environment: Record<string, string | undefined> = process.env): string | false {
  const given = environment.SANDCELL_STATE_DIR;
  if (given === NO_STATE_DIRECTORY) return false;
  if (given) return path.resolve(given);
  const dataHome = environment.XDG_DATA_HOME || path.join(os.homedir(), '.local', 'share');
  return path.join(dataHome, 'sandcell');
}

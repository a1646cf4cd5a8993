/**
 * The snapshot store a library user gets without choosing one: files under the
 * state directory (`<state dir>/store`), signed with the secret kept beside it.
 * A server opens the same kind of store in its own state directory.
 */
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { defaultStateDirectory } from '../internal/state-directory.js';
import { FsObjectStore } from '../store/fs-object-store.js';
import { snapshotSecret } from './snapshot-secret.js';
import { SnapshotStore } from './snapshot-store.js';

/** A snapshot store on local disk in `stateDirectory`. */
export async function openSnapshotStore(stateDirectory: string): Promise<SnapshotStore> {
  return new SnapshotStore(new FsObjectStore(path.join(stateDirectory, 'store')), await snapshotSecret(stateDirectory));
}

const opened = new Map<string, Promise<SnapshotStore>>();

/** The store in the default state directory (`$SANDCELL_STATE_DIR`, else ~/.local/share/sandcell), opened once. */
export function localSnapshotStore(
  environment: Record<string, string | undefined> = process.env,
): Promise<SnapshotStore> {
  const directory = defaultStateDirectory(environment);
  if (directory === false) {
    return Promise.reject(
      new InvalidInputError(
        'Snapshots are kept in the state directory, and SANDCELL_STATE_DIR is `none`: set it to a directory, or give the session a store (option `snapshots`).',
      ),
    );
  }
  let store = opened.get(directory);
  if (!store) {
    store = openSnapshotStore(directory);
    opened.set(directory, store);
    store.catch(() => opened.delete(directory));
  }
  return store;
}

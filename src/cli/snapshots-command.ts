/**
 * `sandcell snapshots list|prune`: the operator's view of what the server keeps
 * in its state directory (or the store `--store` names): paused sessions and snapshots of every key (by the
 * digest of the key's owner, never the key), and deleting what is past the
 * retention. Safe beside a running server: the store's objects are written
 * whole, and a snapshot is deleted manifest first.
 */

import { defaultStateDirectory } from '../internal/state-directory.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { DEFAULT_SNAPSHOT_RETENTION_MS } from '../server/core/numeric-options.js';
import { PausedSessions } from '../server/core/paused-sessions.js';
import { snapshotInfo } from '../session/session-state.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { durationFlag } from './unit-flags.js';

interface SnapshotsOptions {
  stateDir?: string;
  store?: string;
  json?: boolean;
}

function openPaused(options: SnapshotsOptions): PausedSessions {
  const directory = options.stateDir ?? defaultStateDirectory();
  const store = options.store ?? (process.env.SANDCELL_STORE || undefined);
  if (store !== undefined) return new PausedSessions({ stateDirectory: directory, store });
  if (directory === false) {
    throw new CliExit(
      EXIT_USAGE,
      'SANDCELL_STATE_DIR is `none`: there is no state directory to keep snapshots in. Give --state-dir (or --store).',
    );
  }
  return new PausedSessions(directory);
}

export async function snapshotsListCommand(options: SnapshotsOptions): Promise<number> {
  const paused = openPaused(options);
  const store = await paused.snapshots();
  const { manifests, unverified } = await store.listAll();
  const sessions = await paused.listAll();
  const holders = new Map(sessions.flatMap((record) => (record.snapshotId ? [[record.snapshotId, record.id]] : [])));
  const snapshots = manifests.map((manifest) => {
    let info: ReturnType<typeof snapshotInfo> | undefined;
    try {
      info = snapshotInfo(manifest);
    } catch {
      info = undefined;
    }
    return {
      id: manifest.id,
      owner: manifest.owner,
      sessionId: manifest.sessionId,
      createdAt: manifest.createdAt,
      bytes: manifest.parts.reduce((total, part) => total + part.bytes, 0),
      contexts: info?.contexts.map((context) => context.id) ?? [],
      ...(holders.has(manifest.id) ? { pausedSession: holders.get(manifest.id) } : {}),
    };
  });
  if (options.json) {
    process.stdout.write(
      `${JSON.stringify({ location: store.location, snapshots, pausedSessions: sessions, unverified })}\n`,
    );
    return EXIT_OK;
  }
  process.stdout.write(`${store.location}\n`);
  if (snapshots.length === 0) process.stdout.write('no snapshots\n');
  for (const snapshot of snapshots) {
    const held = snapshot.pausedSession ? `, holds paused session ${snapshot.pausedSession}` : '';
    process.stdout.write(
      `${snapshot.id}  ${snapshot.createdAt}  ${formatBytes(snapshot.bytes).padStart(9)}  owner ${snapshot.owner.slice(0, 8)}  session ${snapshot.sessionId} (${snapshot.contexts.join(', ')})${held}\n`,
    );
  }
  const lost = sessions.filter((record) => record.snapshotId === undefined);
  for (const record of lost) process.stdout.write(`lost session ${record.id}: ${record.lost ?? 'no snapshot'}\n`);
  if (unverified > 0) {
    process.stdout.write(
      `${unverified} snapshot(s) do not verify with this store's secret (written by another server, or changed)\n`,
    );
  }
  return EXIT_OK;
}

export async function snapshotsPruneCommand(
  options: SnapshotsOptions & { olderThan?: string; dryRun?: boolean },
): Promise<number> {
  const olderThanMs =
    options.olderThan === undefined
      ? DEFAULT_SNAPSHOT_RETENTION_MS
      : durationFlag('--older-than', options.olderThan, 0);
  const paused = openPaused(options);
  const expired = await paused.expire(olderThanMs, options.dryRun ? { dryRun: true } : {});
  const bytes = expired.snapshots.reduce((total, snapshot) => total + snapshot.bytes, 0);
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ dryRun: options.dryRun === true, olderThanMs, ...expired, bytes })}\n`);
    return EXIT_OK;
  }
  const verb = options.dryRun ? 'would delete' : 'deleted';
  for (const snapshot of expired.snapshots) {
    process.stdout.write(`${verb} snapshot ${snapshot.id} (${snapshot.createdAt}, ${formatBytes(snapshot.bytes)})\n`);
  }
  for (const session of expired.sessions) process.stdout.write(`${verb} paused session ${session.id}\n`);
  process.stdout.write(
    `${verb} ${expired.snapshots.length} snapshot(s), ${formatBytes(bytes)}, and ${expired.sessions.length} paused session(s)${expired.orphanParts ? `; removed ${expired.orphanParts} part(s) of unfinished snapshots` : ''}\n`,
  );
  return EXIT_OK;
}

/**
 * `sandcell snapshots list|prune` on a state directory holding a server's
 * paused session and a snapshot (written through the server's own store by a
 * scripted session): what list shows, and prune's retention and dry run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { PausedSessions } from '../server/core/paused-sessions.js';
import { Session } from '../session/session.js';
import { snapshotsListCommand, snapshotsPruneCommand } from './snapshots-command.js';

const stateDir = mkdtempSync(path.join(os.tmpdir(), 'sandcell-snapshots-cli-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));
afterEach(() => {
  vi.restoreAllMocks();
});

/** What a command printed on stdout. */
async function printed(command: () => Promise<number>): Promise<string> {
  const written: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  expect(await command()).toBe(0);
  vi.restoreAllMocks();
  return written.join('');
}

describe('sandcell snapshots', () => {
  it('lists snapshots and the paused sessions they hold, then prunes those past the retention', async () => {
    const paused = new PausedSessions(stateDir);
    const snapshots = await paused.snapshots();
    const session = await Session.create({
      backend: createScriptedBackend({ execute: () => [] }),
      snapshots,
      owner: 'key-owner',
    });
    await session.run('x = 1');
    const kept = await session.snapshot();
    const pausedInfo = await session.pause();
    await paused.record('key-owner', {
      id: session.id,
      source: 'v1',
      environment: 'default',
      reason: 'idle',
      pausedAt: new Date().toISOString(),
      snapshotId: pausedInfo.id,
    });

    const listed = JSON.parse(await printed(() => snapshotsListCommand({ stateDir, json: true })));
    expect(listed.snapshots.map((snapshot: { id: string }) => snapshot.id).sort()).toEqual(
      [kept.id, pausedInfo.id].sort(),
    );
    expect(listed.snapshots.find((snapshot: { id: string }) => snapshot.id === pausedInfo.id).pausedSession).toBe(
      session.id,
    );
    expect(listed.pausedSessions).toEqual([expect.objectContaining({ id: session.id, snapshotId: pausedInfo.id })]);
    const text = await printed(() => snapshotsListCommand({ stateDir }));
    expect(text).toContain(`holds paused session ${session.id}`);
    // Nothing is a week old.
    const young = JSON.parse(await printed(() => snapshotsPruneCommand({ stateDir, json: true })));
    expect(young.snapshots).toEqual([]);
    // Everything is older than nothing: the dry run says so and deletes nothing.
    const dry = await printed(() => snapshotsPruneCommand({ stateDir, olderThan: '0s', dryRun: true }));
    expect(dry).toContain('would delete 2 snapshot(s)');
    expect(dry).toContain('and 1 paused session(s)');
    expect(JSON.parse(await printed(() => snapshotsListCommand({ stateDir, json: true }))).snapshots).toHaveLength(2);
    await printed(() => snapshotsPruneCommand({ stateDir, olderThan: '0s' }));
    const after = JSON.parse(await printed(() => snapshotsListCommand({ stateDir, json: true })));
    expect(after).toMatchObject({ snapshots: [], pausedSessions: [] });
    expect(await paused.find('key-owner', session.id)).toBeUndefined();
  });
});

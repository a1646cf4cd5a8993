/**
 * Pauses and resumes through the registry on the scripted backend: what a session held is back
 * after its pause, two requests share one resume, the paused ones are listed and deleted for their
 * owner only, and a pause that failed says the session was lost.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ALICE, BOB, shown, useScriptedRuntimes } from '../../../test/support/scripted-registry.js';
import { SessionLostError } from '../../snapshots/snapshot-errors.js';

const { scriptedRuntime, stateDirectory } = useScriptedRuntimes();

describe('SessionPauses', () => {
  it('a paused session is resumed by its next request, holding what it held, once for two requests at once', async () => {
    const { registry } = scriptedRuntime({ stateDirectory: await stateDirectory() });
    const entry = await registry.create(ALICE, 'v1');
    await registry.execute(entry, 'x = 41');
    const record = await registry.pauses.pause(entry, 'requested');
    expect(record).toMatchObject({ id: entry.id, reason: 'requested', snapshotId: expect.any(String) });
    expect(registry.find(ALICE, entry.id)).toBeUndefined();
    expect((await registry.pauses.list(ALICE)).map((paused) => paused.id)).toEqual([entry.id]);
    expect(await registry.pauses.list(BOB)).toEqual([]);

    const [first, second] = await Promise.all([registry.open(ALICE, entry.id), registry.open(ALICE, entry.id)]);
    expect(second).toBe(first);
    expect(first).not.toBe(entry);
    expect(first.restored?.contexts[0]?.restored).toContain('x');
    expect(await shown(registry, first, 'x')).toBe('41');
    // Live again: no longer among the paused.
    expect(await registry.pauses.list(ALICE)).toEqual([]);
    expect(await registry.pauses.find(ALICE, entry.id)).toBeUndefined();
  });

  it('another owner neither resumes nor deletes a paused session; its owner deletes it, and it is gone', async () => {
    const { registry } = scriptedRuntime({ stateDirectory: await stateDirectory() });
    const entry = await registry.create(ALICE, 'v1');
    await registry.pauses.pause(entry, 'requested');
    await expect(registry.open(BOB, entry.id)).rejects.toMatchObject({ code: 'not-found' });
    expect(await registry.pauses.remove(BOB, entry.id)).toBe(false);
    expect(await registry.pauses.remove(ALICE, entry.id)).toBe(true);
    await expect(registry.open(ALICE, entry.id)).rejects.toMatchObject({ code: 'not-found' });
    expect(await registry.pauses.remove(ALICE, entry.id)).toBe(false);
  });

  it('an idle pause of a sandbox already gone leaves a record that says the session was lost, and why', async () => {
    const { registry } = scriptedRuntime({ stateDirectory: await stateDirectory() });
    const entry = await registry.create(ALICE, 'v1');
    await entry.session.close();
    await expect(registry.pauses.pause(entry, 'idle')).rejects.toThrow();
    const lost = await registry.pauses.resumable(ALICE, entry.id).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(SessionLostError);
    expect((lost as Error).message).toContain('its pause (idle) failed');
    await expect(registry.open(ALICE, entry.id)).rejects.toBeInstanceOf(SessionLostError);
  });

  it('a requested pause that fails leaves the session live', async () => {
    const { registry } = scriptedRuntime({
      stateDirectory: await stateDirectory(),
      limits: { snapshotBytes: 1 << 20 },
    });
    const entry = await registry.create(ALICE, 'v1');
    await registry.execute(entry, 'x = 1');
    // More than the key's snapshot quota: its pause is refused.
    await entry.session.files.write('big.bin', randomBytes(2 << 20));
    await expect(registry.pauses.pause(entry, 'requested')).rejects.toThrow(/would pass it, so it was not kept/);
    expect(registry.find(ALICE, entry.id)).toBe(entry);
    expect(entry.pausing).toBeUndefined();
    expect(await registry.pauses.list(ALICE)).toEqual([]);
  });

  it('the paused sessions of a scope that ended are deleted with it, and no other', async () => {
    const { registry } = scriptedRuntime({ stateDirectory: await stateDirectory() });
    const ended = await registry.names.open(ALICE, 'mcp', 'mcp:one', 'default');
    const other = await registry.names.open(ALICE, 'mcp', 'mcp:two', 'default');
    await registry.pauses.pause(ended, 'idle');
    await registry.pauses.pause(other, 'idle');
    await registry.removeScope(ALICE, 'mcp:one');
    expect((await registry.pauses.list(ALICE)).map((record) => record.id)).toEqual([other.id]);
  });
});

/**
 * Sessions found by a client's name, through the registry on the scripted backend: one per owner,
 * scope and name, made on first use, resumed under the name once paused, and a lost one said once.
 */
import { describe, expect, it } from 'vitest';
import { ALICE, BOB, shown, useScriptedRuntimes } from '../../../test/support/scripted-registry.js';
import { SessionLostError } from '../../snapshots/snapshot-errors.js';

const { scriptedRuntime, stateDirectory } = useScriptedRuntimes();

describe('NamedSessions', () => {
  it('one session per owner, scope and name, made on first use, the same for requests at once', async () => {
    const { registry } = scriptedRuntime();
    const [first, again] = await Promise.all([
      registry.names.open(ALICE, 'azure', 'azure', 'report'),
      registry.names.open(ALICE, 'azure', 'azure', 'report'),
    ]);
    expect(again).toBe(first);
    expect(first).toMatchObject({ name: 'report', scope: 'azure', source: 'azure' });
    const otherScope = await registry.names.open(ALICE, 'mcp', 'mcp:1', 'report');
    const otherOwner = await registry.names.open(BOB, 'azure', 'azure', 'report');
    expect(new Set([first.id, otherScope.id, otherOwner.id]).size).toBe(3);
    expect(await registry.names.find(ALICE, 'azure', 'report')).toBe(first);
    expect(await registry.names.find(ALICE, 'azure', 'unknown')).toBeUndefined();
    expect(await registry.names.where(ALICE, 'azure', 'report')).toEqual({ held: true });
    expect(await registry.names.where(ALICE, 'azure', 'unknown')).toEqual({ held: false });
  });

  it('a paused named session is resumed under its name, holding what it held', async () => {
    const { registry } = scriptedRuntime({ stateDirectory: await stateDirectory() });
    const entry = await registry.names.open(ALICE, 'azure', 'azure', 'report');
    await registry.execute(entry, 'x = 7');
    await registry.pauses.pause(entry, 'idle');
    expect(await registry.names.where(ALICE, 'azure', 'report')).toEqual({ held: false, id: entry.id });
    const resumed = await registry.names.open(ALICE, 'azure', 'azure', 'report');
    expect(resumed.id).toBe(entry.id);
    expect(await shown(registry, resumed, 'x')).toBe('7');
    expect(await registry.names.find(ALICE, 'azure', 'report')).toBe(resumed);
  });

  it('a deleted named session frees its name: the next use starts a new one', async () => {
    const { registry } = scriptedRuntime();
    const entry = await registry.names.open(ALICE, 'azure', 'azure', 'report');
    await registry.execute(entry, 'x = 7');
    await registry.remove(entry);
    expect(await registry.names.find(ALICE, 'azure', 'report')).toBeUndefined();
    const fresh = await registry.names.open(ALICE, 'azure', 'azure', 'report');
    expect(fresh).not.toBe(entry);
    expect(await shown(registry, fresh, 'x')).toBe('NameError');
  });

  it('a named session whose state was lost is said lost once; then its name starts a new session', async () => {
    const { registry } = scriptedRuntime({ stateDirectory: await stateDirectory() });
    const entry = await registry.names.open(ALICE, 'azure', 'azure', 'report');
    await entry.session.close();
    await expect(registry.pauses.pause(entry, 'idle')).rejects.toThrow();
    await expect(registry.names.find(ALICE, 'azure', 'report')).rejects.toBeInstanceOf(SessionLostError);
    expect(await registry.names.find(ALICE, 'azure', 'report')).toBeUndefined();
    const fresh = await registry.names.open(ALICE, 'azure', 'azure', 'report');
    expect(fresh.session.closed).toBe(false);
    expect(fresh).not.toBe(entry);
  });
});

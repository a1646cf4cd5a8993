/**
 * The end of the server through the registry on the scripted backend: a drain changes nothing but
 * what it says; a shutdown lets nothing new in, waits its grace for running work, pauses every live
 * session where a state directory keeps them (the next server resumes them), and says of work cut
 * short that the shutdown cut it.
 */
import { describe, expect, it } from 'vitest';
import { ALICE, shown, useScriptedRuntimes } from '../../../test/support/scripted-registry.js';

const { scriptedRuntime, stateDirectory } = useScriptedRuntimes();

describe('SessionDrain', () => {
  it('a drain says the server is going away, and it still serves', async () => {
    const { registry } = scriptedRuntime();
    registry.beginDrain();
    expect(registry.isDraining).toBe(true);
    expect(registry.isShuttingDown).toBe(false);
    const entry = await registry.create(ALICE, 'v1');
    expect((await registry.execute(entry, 'x = 1')).status).toBe('ok');
  });

  it('a shutdown waits for the running execution, refuses new work meanwhile, and pauses the session for the next server', async () => {
    const directory = await stateDirectory();
    const before = scriptedRuntime({ stateDirectory: directory });
    const entry = await before.registry.create(ALICE, 'v1');
    await before.registry.execute(entry, 'x = 5');
    const running = before.registry.execute(entry, 'sleep 300');
    expect(before.registry.stats.running).toBe(1);
    const shutdown = before.registry.shutdown(10_000);
    expect(() => before.registry.admit(entry, 'x')).toThrow(expect.objectContaining({ code: 'shutting-down' }));
    await expect(before.registry.create(ALICE, 'v1')).rejects.toMatchObject({ code: 'shutting-down' });
    expect((await running).status).toBe('ok');
    await shutdown;
    expect(before.registry.stats.live).toBe(0);

    const after = scriptedRuntime({ stateDirectory: directory });
    expect((await after.registry.pauses.list(ALICE)).map((record) => record.reason)).toEqual(['shutdown']);
    const resumed = await after.registry.open(ALICE, entry.id);
    expect(await shown(after.registry, resumed, 'x')).toBe('5');
  });

  it('work still running when the grace ends is told the shutdown cut it short', async () => {
    const { registry, logs } = scriptedRuntime();
    const entry = await registry.create(ALICE, 'v1');
    const running = registry.execute(entry, 'sleep 30000').catch((error: unknown) => error);
    await registry.shutdown(50);
    expect(await running).toMatchObject({
      code: 'shutting-down',
      message: 'The server shut down before the execution finished.',
    });
    expect(logs.lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining(['waiting for running executions and commands', 'every sandbox closed']),
    );
  });
});

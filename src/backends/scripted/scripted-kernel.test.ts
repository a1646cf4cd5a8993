/** The scripted kernel's `wait` step, through a real Session: it waits for what the host does during the run. */
import { afterEach, describe, expect, it } from 'vitest';
import { Session } from '../../session/session.js';
import { createScriptedBackend } from './index.js';

const sessions: Session[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((session) => session.close()));
});

async function waitingSession() {
  const backend = createScriptedBackend({
    execute: ({ files }) => [
      { type: 'stdout', text: 'started\n' },
      { type: 'wait', until: () => files.list().some((entry) => entry.path === 'go') },
      { type: 'stdout', text: 'released\n' },
    ],
  });
  // A grace far past the test's own timeout: a wait that ignored the interrupt could not pass by a restart.
  const session = await Session.create({ backend, interruptGraceMs: 60_000 });
  sessions.push(session);
  return { session, backend };
}

describe('a wait step', () => {
  it('holds the run until the host writes the file it waits for', async () => {
    const { session } = await waitingSession();
    let printed = '';
    let started: () => void = () => undefined;
    const hasStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const run = session.run('wait', {
      onStdout: (text) => {
        printed += text;
        started();
      },
    });
    await hasStarted;
    // Files are answered during a run: the wait is still on after a round trip.
    expect((await session.files.list()).map((entry) => entry.path)).toEqual([]);
    expect(printed).toBe('started\n');
    await session.files.write('go', Buffer.from('go'));
    expect(await run).toMatchObject({ status: 'ok', stdout: 'started\nreleased\n' });
  });

  it('is cut short by an interrupt, as a KeyboardInterrupt, and the kernel lives on', async () => {
    const { session, backend } = await waitingSession();
    const controller = new AbortController();
    // Later than the print, so that the interrupt finds the run waiting (a print's delivery is synchronous here).
    const execution = await session.run('wait', {
      onStdout: () => setTimeout(() => controller.abort(), 20),
      signal: controller.signal,
    });
    expect(execution.error?.name).toBe('KeyboardInterrupt');
    expect(execution.stateLostReason).toBeUndefined();
    expect(backend.sandboxes).toHaveLength(1);
  });
});

describe('an exit-status step', () => {
  it("ends the run there, as the code's sys.exit does, with the status on the execution; the kernel lives on", async () => {
    const backend = createScriptedBackend({
      execute: ({ code }) =>
        code === 'exit'
          ? [
              { type: 'stdout', text: 'bye\n' },
              { type: 'exit-status', status: 0 },
              { type: 'stdout', text: 'never\n' },
            ]
          : [{ type: 'stdout', text: 'still here\n' }],
    });
    const session = await Session.create({ backend });
    sessions.push(session);
    expect(await session.run('exit')).toMatchObject({ status: 'ok', stdout: 'bye\n', exitStatus: 0 });
    const next = await session.run('again');
    expect(next).toMatchObject({ status: 'ok', stdout: 'still here\n' });
    expect(next).not.toHaveProperty('exitStatus');
    expect(backend.sandboxes).toHaveLength(1);
  });
});

/** The sessions held live: found for their owner only, and forgotten once, with the reason, however they ended. */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ALICE, BOB } from '../../../test/support/scripted-registry.js';
import { createScriptedBackend } from '../../backends/scripted/index.js';
import { Session } from '../../session/session.js';
import type { Owner } from './auth.js';
import { LiveSessions } from './live-sessions.js';
import { type ManagedSession, newManagedSession } from './managed-session.js';
import { Metrics } from './metrics.js';
import { PausedSessions } from './paused-sessions.js';
import { SessionRecords } from './session-records.js';

const sessions: Session[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((session) => session.close()));
});

function table() {
  const metrics = new Metrics();
  const logger = pino({ level: 'silent' });
  const paused = new PausedSessions({ stateDirectory: false, environment: {} });
  const forgotten: string[] = [];
  const live = new LiveSessions({
    metrics,
    logger,
    records: new SessionRecords({ paused, logger }),
    forgotten: (entry) => forgotten.push(entry.id),
  });
  return { live, metrics, forgotten };
}

async function held(live: LiveSessions, owner: Owner, id: string): Promise<ManagedSession> {
  const session = await Session.create({ backend: createScriptedBackend() });
  sessions.push(session);
  const entry = newManagedSession({ id, owner, source: 'v1', session });
  live.add(entry);
  return entry;
}

describe('LiveSessions', () => {
  it('finds a session for its owner only: another owner’s is not found, as if it did not exist', async () => {
    const { live } = table();
    const alices = await held(live, ALICE, 'a1');
    await held(live, BOB, 'b1');
    expect(live.find(ALICE, 'a1')).toBe(alices);
    expect(live.get(ALICE, 'a1')).toBe(alices);
    expect(live.find(BOB, 'a1')).toBeUndefined();
    expect(() => live.get(BOB, 'a1')).toThrow(expect.objectContaining({ code: 'not-found' }));
    expect(live.list(ALICE).map((entry) => entry.id)).toEqual(['a1']);
    expect(live.countOwned(BOB)).toBe(1);
    expect(live.holds('b1')).toBe(true);
    expect(live.bySource().v1).toBe(2);
  });

  it('a session closed behind its back is forgotten by the next look, once, and counted as closed', async () => {
    const { live, metrics, forgotten } = table();
    const entry = await held(live, ALICE, 'a1');
    await entry.session.close();
    expect(live.find(ALICE, 'a1')).toBeUndefined();
    expect(() => live.get(ALICE, 'a1')).toThrow(expect.objectContaining({ code: 'not-found' }));
    live.sweep();
    live.forget(entry, 'deleted');
    expect(forgotten).toEqual(['a1']);
    expect(entry.closedReason).toBe('closed');
    expect(live.isHeld(entry)).toBe(false);
    expect(live.size).toBe(0);
    expect(metrics.render()).toMatch(/sandcell_sessions_closed_total\{reason="closed"\} 1/);
  });

  it('a session being paused is held but not found: its request waits for the pause, then resumes it', async () => {
    const { live } = table();
    const entry = await held(live, ALICE, 'a1');
    entry.pausing = new Promise(() => undefined);
    expect(live.holds('a1')).toBe(false);
    expect(live.find(ALICE, 'a1')).toBeUndefined();
    expect(live.byIdAnyOwner('a1')).toBe(entry);
    // Closed under its pause, it is its pause's to forget, not a look's.
    await entry.session.close();
    live.sweep();
    expect(live.isHeld(entry)).toBe(true);
  });

  it('a new session under a forgotten one’s id is not taken for it', async () => {
    const { live } = table();
    const first = await held(live, ALICE, 'a1');
    live.forget(first, 'deleted');
    const second = await held(live, ALICE, 'a1');
    live.forget(first, 'deleted');
    expect(live.find(ALICE, 'a1')).toBe(second);
    expect(live.ofSession(first.session)).toBeUndefined();
    expect(live.ofSession(second.session)).toBe(second);
  });
});

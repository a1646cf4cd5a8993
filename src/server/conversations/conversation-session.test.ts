/**
 * A conversation's session over its lifetime, through the registry on the scripted backend: live
 * once bound; paused, neither live nor gone, and resumed under the same id by the next `ensure`,
 * with its state, bound anew; what the resume did not bring back said once (and told to the model);
 * gone (deleted while paused, closed, its pause failed, unknown after a restart) expires it, saying
 * why, and stops the turn waiting; and let go of, live or paused, when the conversation is deleted.
 * Through a conversation over HTTP: resume.test.ts.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ALICE, shown, useScriptedRuntimes } from '../../../test/support/scripted-registry.js';
import { ScriptedChatModel } from '../../agents/scripted-chat-model.js';
import { ConversationExpiredError, ConversationPausedError } from '../core/errors.js';
import type { ManagedSession, PausedRecord } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { ConversationSession, type ConversationSessionOptions, restoredExpiry } from './conversation-session.js';
import { describeExpiry } from './session-binding.js';

const { scriptedRuntime, stateDirectory } = useScriptedRuntimes();

async function durableRegistry(): Promise<SessionRegistry> {
  return scriptedRuntime({ stateDirectory: await stateDirectory() }).registry;
}

/** A session of a conversation on `entry`'s id (bound to it unless `bound: false`), counting its expiries. */
async function conversationSession(
  registry: SessionRegistry,
  entry: ManagedSession,
  options: Partial<ConversationSessionOptions> & { bound?: boolean } = {},
) {
  const expiries: number[] = [];
  const session = new ConversationSession({
    registry,
    logger: pino({ level: 'silent' }),
    conversationId: 'conversation-1',
    owner: ALICE,
    sessionId: entry.id,
    turns: () => [],
    approve: async () => ({ action: 'run' }),
    onEvent: () => undefined,
    onPublished: () => undefined,
    onExpired: () => expiries.push(Date.now()),
    ...options,
  });
  if (options.bound !== false) await session.bind(entry);
  return { session, expiries };
}

describe('ConversationSession', () => {
  it('is live once bound; paused, it is neither live nor gone, and the next ensure resumes it, bound anew', async () => {
    const registry = await durableRegistry();
    const entry = await registry.create(ALICE, 'conversation');
    const { session, expiries } = await conversationSession(registry, entry);
    expect(session.live).toBe(entry.session);
    expect(session.available()).toBe(entry);
    const fileAgent = session.fileAgent;
    expect(fileAgent).toBeDefined();
    expect(session.cellFiles).toBeDefined();
    expect(session.chat).toBeUndefined(); // no model
    await session.ensure(); // live: nothing to do
    expect(session.entry).toBe(entry);

    await registry.execute(entry, 'x = 41');
    await registry.pauses.pause(entry, 'requested');
    expect(session.live).toBeUndefined();
    expect(session.expired).toBeUndefined();
    expect(() => session.available()).toThrow(ConversationPausedError);

    await Promise.all([session.ensure(), session.ensure()]);
    const resumed = session.entry!;
    expect(resumed).not.toBe(entry);
    expect(resumed.id).toBe(entry.id);
    expect(session.live).toBe(resumed.session);
    expect(session.fileAgent).not.toBe(fileAgent);
    expect(await shown(registry, resumed, 'x')).toBe('41');
    // Everything came back: nothing to say.
    expect(session.takeNotice()).toBeUndefined();
    expect(expiries).toEqual([]);
  });

  it('says once what the resume did not bring back, and tells the chat’s model at once; the chat goes on', async () => {
    const registry = await durableRegistry();
    const entry = await registry.create(ALICE, 'conversation');
    const { session } = await conversationSession(registry, entry, { model: new ScriptedChatModel() });
    const chat = session.chat!;
    chat.pythonAgent.addContext('Told before the pause.');
    await registry.execute(entry, 'conn = socket()');
    await registry.pauses.pause(entry, 'requested');
    await session.ensure();

    expect(session.chat).not.toBe(chat);
    expect(session.chat!.pythonAgent.instructions).toContain('Told before the pause.');
    expect(session.chat!.pythonAgent.instructions).toContain('conn (function)');
    expect(session.takeNotice()).toEqual({
      skipped: [{ name: 'conn', reason: 'function' }],
      notKept: [],
      message: '1 variable could not be restored: conn (function).',
    });
    expect(session.takeNotice()).toBeUndefined();
  });

  it('expires when its paused session was deleted, stopping the turn that waits, and refuses turns saying why', async () => {
    const registry = await durableRegistry();
    const entry = await registry.create(ALICE, 'conversation');
    const { session, expiries } = await conversationSession(registry, entry);
    await registry.pauses.pause(entry, 'requested');
    expect(await registry.pauses.remove(ALICE, entry.id)).toBe(true);

    await session.ensure();
    expect(session.expired).toMatchObject({ reason: 'gone' });
    expect(describeExpiry(session.expired!)).toBe('was deleted while it was paused');
    expect(expiries).toHaveLength(1);
    expect(session.live).toBeUndefined();
    expect(() => session.available()).toThrow(ConversationExpiredError);
    expect(() => session.available()).toThrow(/session was deleted while it was paused/);
    // Gone stays gone: nothing is resumed, nothing more is let go of.
    await session.ensure();
    await session.close();
    expect(session.expired).toMatchObject({ reason: 'gone' });
  });

  it('expires with the reason its session closed; one whose pause failed was lost, and its record says why', async () => {
    const registry = await durableRegistry();
    const deleted = await registry.create(ALICE, 'conversation');
    const first = await conversationSession(registry, deleted);
    await registry.remove(deleted, 'deleted');
    expect(first.session.expired).toMatchObject({ reason: 'deleted', at: deleted.closedAt });
    expect(first.expiries).toHaveLength(1);

    const lost = await registry.create(ALICE, 'conversation');
    const second = await conversationSession(registry, lost);
    await lost.session.close();
    await expect(registry.pauses.pause(lost, 'idle')).rejects.toThrow();
    expect(second.session.expired).toMatchObject({ reason: 'lost' });
    await expect.poll(() => second.session.expired?.detail).toContain('its pause (idle) failed');
    expect(describeExpiry(second.session.expired!)).toMatch(/^was lost, its state could not be kept: its pause/);
  });

  it('read back from disk: resumed when its session was paused with a snapshot, else expired, saying why', async () => {
    const pausedAt = '2025-01-02T03:04:05.000Z';
    const record: PausedRecord = {
      id: 'session-1',
      source: 'conversation',
      environment: 'default',
      reason: 'shutdown',
      pausedAt,
    };
    expect(restoredExpiry({ ...record, snapshotId: 'snapshot-1' })).toBeUndefined();
    expect(restoredExpiry(undefined)).toMatchObject({ reason: 'restart' });
    expect(restoredExpiry({ ...record, lost: 'its pause (shutdown) failed: no room' })).toEqual({
      at: Date.parse(pausedAt),
      reason: 'lost',
      detail: 'its pause (shutdown) failed: no room',
    });

    // Read back with a record that had a snapshot, but the session is not there: it ended with the restart.
    const registry = await durableRegistry();
    const entry = await registry.create(ALICE, 'conversation');
    await registry.remove(entry, 'deleted');
    const { session, expiries } = await conversationSession(registry, entry, { bound: false });
    expect(session.expired).toBeUndefined();
    expect(() => session.available()).toThrow(ConversationPausedError);
    await session.ensure();
    expect(session.expired).toMatchObject({ reason: 'restart' });
    expect(expiries).toHaveLength(1);

    const gone = await conversationSession(registry, entry, { bound: false, expiry: restoredExpiry(undefined) });
    expect(gone.session.expired).toMatchObject({ reason: 'restart' });
    expect(() => gone.session.available()).toThrow(/ended when the server restarted/);
  });

  it('lets go of its session when the conversation is deleted: a live one is closed, a paused one deleted', async () => {
    const registry = await durableRegistry();
    const live = await registry.create(ALICE, 'conversation');
    await (await conversationSession(registry, live)).session.close();
    expect(live.session.closed).toBe(true);
    expect(live.closedReason).toBe('deleted');
    expect(registry.find(ALICE, live.id)).toBeUndefined();

    const paused = await registry.create(ALICE, 'conversation');
    const { session } = await conversationSession(registry, paused);
    await registry.pauses.pause(paused, 'idle');
    expect((await registry.pauses.list(ALICE)).map((record) => record.id)).toEqual([paused.id]);
    await session.close();
    expect(await registry.pauses.list(ALICE)).toEqual([]);
    await expect(registry.open(ALICE, paused.id)).rejects.toMatchObject({ code: 'not-found' });
  });
});

/** Upload links: honoured by a server on the same store until they expire, by no other, and never once changed. */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ManagedSession } from './managed-session.js';
import { PausedSessions } from './paused-sessions.js';
import { SessionFiles } from './session-files.js';

const stores: PausedSessions[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function files(): SessionFiles {
  const paused = new PausedSessions(false);
  stores.push(paused);
  return new SessionFiles({ paused, logger: pino({ level: 'silent' }) });
}

const entry = { id: 'session-1', owner: { id: 'owner-a', label: 'a' } } as ManagedSession;
const token = (link: string) => link.replace('/v1/uploads/', '');

describe('SessionFiles upload links', () => {
  it('names its owner, session and path to its own store until it expires; another store takes none of it', async () => {
    const mine = files();
    const link = await mine.uploadLink(entry, 'inputs/data.csv', new Date(Date.now() + 60_000));
    expect(link).toMatch(/^\/v1\/uploads\//);
    expect(await mine.uploadTarget(token(link))).toEqual({
      ownerId: 'owner-a',
      sessionId: 'session-1',
      path: 'inputs/data.csv',
    });
    expect(await files().uploadTarget(token(link))).toBeUndefined();
    const expired = await mine.uploadLink(entry, 'a.txt', new Date(Date.now() - 1000));
    expect(await mine.uploadTarget(token(expired))).toBeUndefined();
  });

  it('refuses a link changed by one character, and one that is not a link at all', async () => {
    const mine = files();
    const value = token(await mine.uploadLink(entry, 'a.txt', new Date(Date.now() + 60_000)));
    const last = value.at(-1) === 'A' ? 'B' : 'A';
    expect(await mine.uploadTarget(value.slice(0, -1) + last)).toBeUndefined();
    expect(await mine.uploadTarget('not-a-token')).toBeUndefined();
  });
});

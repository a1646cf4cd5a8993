/**
 * The journal's file stays readable and bounded: what it wrote reads back as
 * the conversation stands, snapshots of a growing turn do not pile up past a
 * few times the history (the file is rewritten), a rewrite after a drop keeps
 * only what is left, and delete removes the file. The source is a plain
 * conversation-shaped object: the journal reads nothing else.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Turn } from '../../protocol/index.js';
import { ImageStore } from '../core/image-store.js';
import { ConversationJournal, type JournalSource } from './conversation-journal.js';
import { HISTORY_FORMAT_VERSION, readHistory } from './history-records.js';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-journal-'));
});
afterAll(() => rm(directory, { recursive: true, force: true }));

function source(): JournalSource & { turns: Turn[]; title: string } {
  const turns: Turn[] = [];
  return {
    header: () => ({
      type: 'conversation',
      version: HISTORY_FORMAT_VERSION,
      id: '0b7e6a52-3c1e-4f7e-9a55-0c3f0e1d2a3b',
      ownerId: 'local',
      sessionId: 's',
      createdAt: 1,
      title: 'New conversation',
      titled: false,
    }),
    title: 'New conversation',
    titled: false,
    updatedAt: 2,
    droppedTurns: 0,
    turns,
    get historyBytes() {
      return Buffer.byteLength(JSON.stringify(turns));
    },
    images: new ImageStore(),
  };
}

const cell = (id: string, stdout: string, status: Turn['status'] = 'done'): Turn => ({
  id,
  kind: 'cell',
  createdAt: '2026-11-23T16:00:00.000Z',
  status,
  input: 'x',
  steps: [
    {
      type: 'code',
      callId: id,
      code: 'x',
      attempt: 1,
      maxAttempts: 1,
      status: 'ok',
      stdout,
      stderr: '',
      results: [],
      files: [],
    },
  ],
});

describe('conversation journal', () => {
  it('writes the header at once and each settled turn, readable back; 0600', async () => {
    const file = path.join(directory, 'a.jsonl');
    const conversation = source();
    const journal = new ConversationJournal(file, conversation, pino({ level: 'silent' }));
    journal.created();
    conversation.turns.push(cell('t1', 'one\n'));
    journal.turnChanged(conversation.turns[0]!);
    await journal.flushed();
    const history = readHistory(await readFile(file, 'utf8'));
    expect(history.turns).toEqual(conversation.turns);
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');
  });

  it('rewrites a file that grew past three times its history, and after a drop', async () => {
    const file = path.join(directory, 'b.jsonl');
    const conversation = source();
    const journal = new ConversationJournal(file, conversation, pino({ level: 'silent' }));
    journal.created();
    const output = 'y'.repeat(512 * 1024);
    conversation.turns.push(cell('t1', output));
    // A turn rewritten thirty times (as a long cell's output grows) would be 15 MiB appended.
    for (let round = 0; round < 30; round++) {
      conversation.turns[0] = cell('t1', `${round}${output}`);
      journal.turnChanged(conversation.turns[0]);
      await journal.flushed();
    }
    const size = (await stat(file)).size;
    expect(size).toBeLessThanOrEqual(3 * conversation.historyBytes + 4 * 1024 * 1024 + 600 * 1024);
    expect(readHistory(await readFile(file, 'utf8')).turns).toEqual(conversation.turns);

    conversation.turns.splice(0, 1, cell('t2', 'small\n'));
    journal.rewrite();
    await journal.flushed();
    expect((await stat(file)).size).toBeLessThan(2_000);
    expect(readHistory(await readFile(file, 'utf8')).turns.map((turn) => turn.id)).toEqual(['t2']);

    await journal.delete();
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });
});

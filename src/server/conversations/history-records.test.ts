/**
 * The history file's records read back as written: a later record of a turn
 * replaces the earlier one, a torn last line and damaged records in the middle
 * are skipped, a turn the server stopped during says so, and a file without
 * its conversation record is refused.
 */
import { describe, expect, it } from 'vitest';
import type { Turn } from '../../protocol/index.js';
import {
  encodeRecord,
  type HeaderRecord,
  HISTORY_FORMAT_VERSION,
  readHistory,
  UnreadableHistoryError,
} from './history-records.js';

const header: HeaderRecord = {
  type: 'conversation',
  version: HISTORY_FORMAT_VERSION,
  id: '6f1c1f4e-7a57-4c4b-9a0e-1d2b3c4d5e6f',
  ownerId: 'key-0123456789abcdef',
  sessionId: 'session-1',
  createdAt: 1_000,
  title: 'New conversation',
  titled: false,
};

function turn(id: string, status: Turn['status'], stdout = ''): Turn {
  return {
    id,
    kind: 'cell',
    createdAt: '2026-11-23T16:00:00.000Z',
    status,
    input: 'print(1)',
    steps: [
      {
        type: 'code',
        callId: id,
        code: 'print(1)',
        attempt: 1,
        maxAttempts: 1,
        status: status === 'running' ? 'running' : 'ok',
        stdout,
        stderr: '',
        results: [],
        files: [],
      },
    ],
  };
}

const turnLine = (value: Turn, title = 'print(1)', updatedAt = 2_000) =>
  encodeRecord({ type: 'turn', title, titled: true, updatedAt, droppedTurns: 0, turn: value });

describe('history records', () => {
  it('replays turns in the order first written, each as last written, with the latest title', () => {
    const text = [
      encodeRecord(header),
      turnLine(turn('a', 'running'), 'first'),
      turnLine(turn('b', 'done', '2\n'), 'second', 3_000),
      turnLine(turn('a', 'done', '1\n'), 'third', 4_000),
      encodeRecord({ type: 'mode', mode: 'notebook' }),
      encodeRecord({ type: 'mode', mode: 'chat' }),
    ].join('');
    const history = readHistory(text);
    expect(history.turns.map((each) => [each.id, each.status])).toEqual([
      ['a', 'done'],
      ['b', 'done'],
    ]);
    expect(history.title).toBe('third');
    expect(history.mode).toBe('chat');
    expect(history.updatedAt).toBe(4_000);
    expect(history.skipped).toBe(0);
    expect(history.torn).toBe(false);
  });

  it('keeps the volumes its session mounts in the header, for a restart and a continuation', () => {
    const volumes = [
      { volumeId: 'vol0123456789abcdef0123', volume: 'notes', path: '/mnt/volumes/notes', readOnly: false },
    ];
    const history = readHistory(encodeRecord({ ...header, volumes }));
    expect(history.header.volumes).toEqual(volumes);
    // A header whose volumes are not mounts is not this conversation's.
    expect(() => readHistory(encodeRecord({ ...header, volumes: [{ path: 7 }] } as unknown as HeaderRecord))).toThrow(
      UnreadableHistoryError,
    );
  });

  it('skips a torn last record: the turn before it stands', () => {
    const whole = turnLine(turn('a', 'done', 'kept\n'));
    const torn = turnLine(turn('a', 'done', 'never finished writing\n')).slice(0, 40);
    const history = readHistory(encodeRecord(header) + whole + torn);
    expect(history.torn).toBe(true);
    expect(history.turns).toHaveLength(1);
    expect((history.turns[0]!.steps[0] as { stdout: string }).stdout).toBe('kept\n');
  });

  it('skips damaged records in the middle and counts them', () => {
    const text = [
      encodeRecord(header),
      '{"type":"turn","title":\n',
      encodeRecord({ type: 'image', name: '../../etc/passwd', mimeType: 'image/png', data: 'AAAA' } as never),
      encodeRecord({ type: 'image', name: 'aaaaaaaaaaaaaaaaaaaa.png', mimeType: 'text/html', data: 'AAAA' }),
      '{"type":"turn","title":"x","titled":true,"updatedAt":1,"droppedTurns":0,"turn":{"id":"z"}}\n',
      turnLine(turn('b', 'done')),
      encodeRecord({ type: 'image', name: 'bbbbbbbbbbbbbbbbbbbb.png', mimeType: 'image/png', data: 'iVBORw==' }),
    ].join('');
    const history = readHistory(text);
    expect(history.skipped).toBe(4);
    expect(history.turns.map((each) => each.id)).toEqual(['b']);
    expect([...history.images.keys()]).toEqual(['bbbbbbbbbbbbbbbbbbbb.png']);
    expect(history.images.get('bbbbbbbbbbbbbbbbbbbb.png')!.data).toEqual(Buffer.from('iVBORw==', 'base64'));
  });

  it('marks a turn the server stopped during: an error that says so, its unfinished code stopped', () => {
    const history = readHistory(encodeRecord(header) + turnLine(turn('a', 'running', 'half way\n')));
    const [stopped] = history.turns;
    expect(stopped!.status).toBe('error');
    expect(stopped!.error?.code).toBe('server-restarted');
    expect(stopped!.steps[0]).toMatchObject({ status: 'skipped', skipReason: 'cancelled', stdout: 'half way\n' });
  });

  it('refuses a file whose first record is not its conversation', () => {
    expect(() => readHistory('')).toThrow(UnreadableHistoryError);
    expect(() => readHistory(turnLine(turn('a', 'done')))).toThrow(UnreadableHistoryError);
    expect(() => readHistory(encodeRecord({ ...header, version: 99 } as never))).toThrow(UnreadableHistoryError);
    expect(() => readHistory(encodeRecord(header).slice(0, 30))).toThrow(UnreadableHistoryError);
  });
});

/** What a resumed conversation says did not come back: nothing when all did; names, counts and bounds. */
import { describe, expect, it } from 'vitest';
import { resumeNoteForModel, resumeNotice } from './resume-notice.js';

describe('resumeNotice', () => {
  it('says nothing when everything came back', () => {
    expect(resumeNotice(undefined)).toBeUndefined();
    expect(
      resumeNotice({
        kind: 'kernel-state',
        contexts: [{ id: 'python', language: 'python', restored: ['x'], skipped: [] }],
        notKept: [],
      }),
    ).toBeUndefined();
  });

  it("names each name with its reason (and a context's other than python's), and what was not kept", () => {
    const notice = resumeNotice({
      kind: 'kernel-state',
      contexts: [
        {
          id: 'python',
          language: 'python',
          restored: ['df'],
          skipped: [
            { name: 'conn', reason: 'socket' },
            { name: 'gen', reason: 'generator' },
          ],
        },
        { id: 'javascript', language: 'javascript', restored: [], skipped: [{ name: 'timer', reason: 'Timeout' }] },
      ],
      notKept: [{ name: 'command 3: sleep 100', reason: 'a running process is not kept' }],
    });
    expect(notice).toEqual({
      skipped: [
        { name: 'conn', reason: 'socket' },
        { name: 'gen', reason: 'generator' },
        { name: 'timer', reason: 'Timeout', context: 'javascript' },
      ],
      notKept: [{ name: 'command 3: sleep 100', reason: 'a running process is not kept' }],
      message:
        '3 variables could not be restored: conn (socket), gen (generator), timer (Timeout, in javascript). ' +
        'Not kept from when it was paused: command 3: sleep 100 (a running process is not kept).',
    });
    expect(resumeNoteForModel(notice!)).toContain('conn (socket), gen (generator)');
  });

  it('bounds what the sandbox named: at most 50 listed, 10 in the message, each name cut', () => {
    const skipped = Array.from({ length: 120 }, (_, index) => ({ name: `v${index}`, reason: 'socket' }));
    skipped[0] = { name: 'x'.repeat(5_000), reason: 'a\nreason' };
    const notice = resumeNotice({
      kind: 'kernel-state',
      contexts: [{ id: 'python', language: 'python', restored: [], skipped }],
      notKept: [],
    })!;
    expect(notice.skipped).toHaveLength(50);
    expect(notice.skipped[0]!.name.length).toBeLessThanOrEqual(201);
    expect(notice.skipped[0]!.reason).toBe('a reason');
    expect(notice.message).toMatch(
      /^120 variables could not be restored: x+… \(a reason\), v1 \(socket\), .* and 110 more\.$/,
    );
  });
});

/**
 * The turn loop on its own, with the work of each turn written here: a turn is announced, its
 * events folded into the history and heard by its listener as they come, and it ends done, failed
 * (saying why) or cancelled (its pending approval declined, the code that never ran skipped); an
 * approval is answered once; each code step keeps its output within its budget; and what a resume
 * did not bring back is the turn's first event. Through a conversation: cells.test.ts, messages.test.ts.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { fold, lastTurn } from '../../../test/support/conversation-events.js';
import type { ApprovalDecision, ApprovalRequest } from '../../agents/python-exec-agent.js';
import type { ApprovalMode, ConversationEvent, SessionResumed, Turn } from '../../protocol/index.js';
import { ApprovalDecidedError, ApprovalNotFoundError } from '../core/errors.js';
import type { RunningTurn } from './running-turn.js';
import { TurnLoop } from './turn-loop.js';

const REQUEST: ApprovalRequest = {
  callId: 'call_1',
  code: 'rm -rf data',
  language: 'python',
  attempt: 1,
  maxAttempts: 1,
};

function conversation(outputBytes = 64 * 1024) {
  const turns: Turn[] = [];
  const journaled: Turn[] = [];
  const heard: ConversationEvent[] = [];
  let bounded = 0;
  const loop = new TurnLoop({
    turns,
    outputBytes,
    logger: pino({ level: 'silent' }),
    touch: () => undefined,
    turnChanged: (turn) => journaled.push(turn),
    keepWithinLimits: () => bounded++,
  });
  const start = (
    work: (running: RunningTurn) => Promise<void>,
    options: { approval?: ApprovalMode; resumed?: SessionResumed } = {},
  ) =>
    loop.start(
      {
        kind: 'message',
        input: 'Hello?',
        approval: options.approval ?? 'auto',
        listener: (event) => heard.push(event),
        resumed: options.resumed,
      },
      work,
    );
  /** A turn that asks to run REQUEST (and throws once decided, when told to): resolves once the request is heard. */
  const asking = async (options: { thenThrow?: boolean } = {}) => {
    let decision: ApprovalDecision | undefined;
    const { done } = start(
      async () => {
        decision = await loop.requestApproval(REQUEST);
        if (options.thenThrow) throw new Error('stopped');
      },
      { approval: 'ask' },
    );
    await expect.poll(() => heard.some((event) => event.type === 'approval-request')).toBe(true);
    const asked = heard.find((event) => event.type === 'approval-request')!;
    return { done, asked, decision: () => decision };
  };
  return { loop, turns, journaled, heard, start, asking, bounded: () => bounded };
}

describe('TurnLoop', () => {
  it('announces a turn, folds its events into the history as they come, and ends it done', async () => {
    const { loop, turns, journaled, heard, start, bounded } = conversation();
    let during: Turn | undefined;
    const { turn, done } = start(async () => {
      loop.emit({ type: 'answer-delta', text: 'Hel' });
      loop.emit({ type: 'answer-delta', text: 'lo.' });
      during = loop.turn();
    });
    expect(turn).toMatchObject({ kind: 'message', input: 'Hello?', status: 'running', steps: [] });
    const final = await done;
    expect(during).toMatchObject({ status: 'running', steps: [{ type: 'text', text: 'Hello.' }] });
    expect(final).toMatchObject({ id: turn.id, status: 'done', steps: [{ type: 'text', text: 'Hello.' }] });
    expect(turns).toEqual([final]);
    expect(heard.map((event) => event.type)).toEqual(['turn-start', 'answer-delta', 'answer-delta', 'turn-end']);
    expect(fold(heard)).toEqual(final);
    // The journal wrote every change, the last the turn as it ended; the bounds were kept once it had.
    expect(journaled.at(-1)).toEqual(final);
    expect(journaled.length).toBe(4);
    expect(bounded()).toBe(1);
    expect(loop.running).toBeUndefined();
    expect(loop.turn()).toBeUndefined();
    // Nothing runs: an event has no turn to go into.
    loop.emit({ type: 'answer-delta', text: 'late' });
    expect(turns[0]).toEqual(final);
  });

  it('ends a turn whose work failed with an error event, saying nothing of an error not sandcell’s own', async () => {
    const { heard, start } = conversation();
    const final = await start(async () => {
      throw new Error('a secret of the server');
    }).done;
    expect(final.status).toBe('error');
    expect(final.error).toEqual({
      code: 'internal-error',
      message: 'The turn failed unexpectedly; see the server log.',
    });
    expect(heard.map((event) => event.type)).toEqual(['turn-start', 'error', 'turn-end']);
    expect(JSON.stringify(heard)).not.toContain('a secret');
  });

  it('cancels a turn: its pending approval is declined, its code that never ran skipped, and no error said', async () => {
    const { loop, heard, asking } = conversation();
    // Thrown after the decision, as a work stopped by its signal throws: not a failure.
    const { done, asked, decision } = await asking({ thenThrow: true });
    expect(asked).toMatchObject({ callId: 'call_1', code: 'rm -rf data', approvalId: expect.any(String) });
    expect(loop.cancel()).toBe(true);
    const final = await done;
    expect(decision()).toEqual({ action: 'skip', reason: 'The user stopped this turn.' });
    expect(final.status).toBe('cancelled');
    expect(final.steps).toEqual([
      expect.objectContaining({ callId: 'call_1', status: 'skipped', skipReason: 'cancelled' }),
    ]);
    expect(heard.map((event) => event.type)).toEqual([
      'turn-start',
      'approval-request',
      'execution-skipped',
      'turn-end',
    ]);
    expect(lastTurn(heard)).toEqual(final);
    expect(loop.cancel()).toBe(false);
  });

  it('takes one answer to an approval; code runs unasked when the turn does not ask', async () => {
    const { loop, asking } = conversation();
    const { done, asked, decision } = await asking();
    const approvalId = asked.type === 'approval-request' ? asked.approvalId : '';
    expect(() => loop.approve('no-such-approval', { decision: 'run' })).toThrow(ApprovalNotFoundError);
    loop.approve(approvalId, { decision: 'edit', code: 'print(1)' });
    expect(() => loop.approve(approvalId, { decision: 'run' })).toThrow(ApprovalDecidedError);
    await done;
    expect(decision()).toEqual({ action: 'edit', code: 'print(1)' });
    // No turn running: nothing waits for an answer, and code is not held up.
    expect(() => loop.approve(approvalId, { decision: 'run' })).toThrow(ApprovalNotFoundError);
    expect(await loop.requestApproval(REQUEST)).toEqual({ action: 'run' });

    const unasked = conversation();
    let unaskedDecision: ApprovalDecision | undefined;
    await unasked.start(async () => {
      unaskedDecision = await unasked.loop.requestApproval(REQUEST);
    }).done;
    expect(unaskedDecision).toEqual({ action: 'run' });
    expect(unasked.heard.map((event) => event.type)).toEqual(['turn-start', 'turn-end']);
  });

  it('keeps each code step’s output within its budget, and says first what the resume did not bring back', async () => {
    const { loop, heard, start } = conversation(64);
    const resumed: SessionResumed = {
      skipped: [{ name: 'conn', reason: 'function' }],
      notKept: [],
      message: 'conn is gone.',
    };
    const final = await start(
      async () => {
        loop.emit({
          type: 'execution-start',
          callId: 'call_1',
          code: 'print()',
          attempt: 1,
          maxAttempts: 1,
          edited: false,
        });
        loop.emit({ type: 'stdout-delta', callId: 'call_1', text: 'a'.repeat(100) });
        loop.emit({ type: 'stdout-delta', callId: 'call_1', text: 'late output' });
      },
      { resumed },
    ).done;
    expect(heard.map((event) => event.type)).toEqual([
      'turn-start',
      'session-resumed',
      'execution-start',
      'stdout-delta',
      'turn-end',
    ]);
    expect(final.resumed).toEqual(resumed);
    const step = final.steps[0];
    expect(step?.type === 'code' ? step.stdout : '').toMatch(
      /^a{64}\n\[output cut: this conversation keeps the first 64 B/,
    );
    expect(JSON.stringify(final)).not.toContain('late output');
  });
});

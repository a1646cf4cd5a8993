import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { applyConversationEvent } from './apply-conversation-event.js';
import type { ConversationEvent } from './events.js';
import type { Turn } from './transcript.js';

const started: Turn = {
  id: 'turn-1',
  kind: 'message',
  createdAt: '2025-01-01T00:00:00.000Z',
  status: 'running',
  input: 'How many rows?',
  steps: [],
};

function fold(events: ConversationEvent[]): Turn {
  return events.reduce(applyConversationEvent, started);
}

describe('applyConversationEvent', () => {
  it('folds a question into its turn: words, code with its output, an approval, a retry, the answer', () => {
    const turn = fold([
      { type: 'turn-start', turn: started },
      { type: 'step-start', agent: 'python', step: 1, maxSteps: 10 },
      { type: 'answer-delta', agent: 'python', text: 'Let me ' },
      { type: 'answer-delta', agent: 'python', text: 'count.' },
      { type: 'code-ready', callId: 'call_a', code: 'len(df)', attempt: 1, maxAttempts: 3 },
      {
        type: 'approval-request',
        approvalId: 'approval-1',
        callId: 'call_a',
        code: 'len(df)',
        attempt: 1,
        maxAttempts: 3,
      },
      { type: 'execution-start', callId: 'call_a', code: 'len(df) + 0', attempt: 1, maxAttempts: 3, edited: true },
      { type: 'stdout-delta', callId: 'call_a', text: 'counting\n' },
      { type: 'stderr-delta', callId: 'call_a', text: 'warning\n' },
      {
        type: 'result-ready',
        callId: 'call_a',
        result: { type: 'execute_result', data: { 'text/plain': '3' }, metadata: {} },
      },
      {
        type: 'execution-end',
        callId: 'call_a',
        execution: { status: 'ok', executionCount: 1, durationMs: 5 },
        results: [{ type: 'execute_result', data: { 'text/plain': '3' }, metadata: {} }],
        files: [],
      },
      { type: 'code-ready', callId: 'call_b', code: 'print(1)', attempt: 1, maxAttempts: 3 },
      { type: 'execution-skipped', callId: 'call_b', code: 'print(1)', reason: 'declined' },
      { type: 'answer-delta', agent: 'python', text: 'There are 3 rows.' },
      { type: 'answer-end', stopReason: 'answer', steps: 2, usage: { inputTokens: 10, outputTokens: 5 } },
    ]);
    expect(turn.steps).toEqual([
      { type: 'text', text: 'Let me count.' },
      {
        type: 'code',
        callId: 'call_a',
        code: 'len(df)',
        ranCode: 'len(df) + 0',
        attempt: 1,
        maxAttempts: 3,
        status: 'ok',
        stdout: 'counting\n',
        stderr: 'warning\n',
        results: [{ type: 'execute_result', data: { 'text/plain': '3' }, metadata: {} }],
        execution: { status: 'ok', executionCount: 1, durationMs: 5 },
        files: [],
      },
      {
        type: 'code',
        callId: 'call_b',
        code: 'print(1)',
        attempt: 1,
        maxAttempts: 3,
        status: 'skipped',
        skipReason: 'declined',
        stdout: '',
        stderr: '',
        results: [],
        files: [],
      },
      { type: 'text', text: 'There are 3 rows.' },
    ]);
    expect(turn.answer).toEqual({ stopReason: 'answer', steps: 2, usage: { inputTokens: 10, outputTokens: 5 } });
  });

  it("keeps what ran a piece of code on its step: a shell command, a cell's language; python is left unsaid", () => {
    const turn = fold([
      { type: 'code-ready', callId: 'a', code: 'ls', language: 'shell', attempt: 1, maxAttempts: 3 },
      {
        type: 'approval-request',
        approvalId: 'p',
        callId: 'b',
        code: 'rm x',
        language: 'shell',
        attempt: 1,
        maxAttempts: 3,
      },
      {
        type: 'execution-start',
        callId: 'c',
        code: 'console.log(1)',
        language: 'javascript',
        attempt: 1,
        maxAttempts: 1,
        edited: false,
      },
      {
        type: 'execution-start',
        callId: 'd',
        code: '1 + 1',
        language: 'python',
        attempt: 1,
        maxAttempts: 1,
        edited: false,
      },
    ]);
    expect(turn.steps.map((step) => (step.type === 'code' ? [step.callId, step.language] : []))).toEqual([
      ['a', 'shell'],
      ['b', 'shell'],
      ['c', 'javascript'],
      ['d', undefined],
    ]);
  });

  it('records a failure and takes the turn the server ends it with', () => {
    const failed = fold([
      { type: 'error', error: { code: 'model-unavailable', message: 'The model did not answer.' } },
    ]);
    expect(failed).toMatchObject({ status: 'error', error: { code: 'model-unavailable' } });
    const ended: Turn = { ...started, status: 'cancelled' };
    expect(applyConversationEvent(failed, { type: 'turn-end', turn: ended })).toBe(ended);
  });
});

describe('src/protocol', () => {
  it('imports nothing of sandcell outside itself, so the web UI can bundle it', async () => {
    const directory = new URL('.', import.meta.url);
    const files = (await readdir(directory)).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
    expect(files).toContain('index.ts');
    for (const name of files) {
      const source = await readFile(new URL(name, directory), 'utf8');
      const specifiers = [...source.matchAll(/\bfrom\s+'([^']+)'/g)].map((match) => match[1]);
      expect(
        specifiers.filter((specifier) => !specifier?.startsWith('./')),
        name,
      ).toEqual([]);
    }
  });
});

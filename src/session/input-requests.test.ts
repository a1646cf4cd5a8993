/**
 * The host's side of input(): a kernel's input-request reaches RunOptions.onInput
 * (its prompt bounded) and the answer goes back; a run that did not offer
 * onInput is never asked. Real kernels: test/contract/assist-contract.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import type { InputRequest } from './execution.js';
import { INPUT_PROMPT_CHARS } from './kernel-protocol.js';
import { Session } from './session.js';

describe('input requests from a run', () => {
  let session: Session | undefined;
  afterEach(async () => {
    await session?.close();
  });

  it('passes a bounded prompt to onInput and sends its answer back; a run without onInput never answers', async () => {
    const backend = createScriptedBackend({
      execute: ({ executionId }) => [
        {
          type: 'send',
          from: 'kernel',
          line: { type: 'input-request', id: executionId, prompt: 'p'.repeat(INPUT_PROMPT_CHARS + 10), password: 1 },
        },
        { type: 'sleep', ms: 50 },
      ],
    });
    session = await Session.create({ backend });
    const asked: InputRequest[] = [];
    await session.run('ask', {
      onInput: async (request) => {
        asked.push(request);
        return 'answer';
      },
    });
    await session.run('ask again, unasked');
    expect(asked).toEqual([{ prompt: 'p'.repeat(INPUT_PROMPT_CHARS), password: false }]);
    const sent = backend.sandboxes[0]?.requests ?? [];
    const executes = sent.filter((request) => (request as { type: string }).type === 'execute');
    expect(executes.map((request) => (request as { stdin?: boolean }).stdin)).toEqual([true, undefined]);
    const replies = sent.filter((request) => (request as { type: string }).type === 'input-reply');
    expect(replies).toEqual([expect.objectContaining({ value: 'answer', context: 'python' })]);
  });
});

describe("the scripted backend's input step", () => {
  let session: Session | undefined;
  afterEach(async () => {
    await session?.close();
  });

  it('echoes the answer, fails with EOFError without onInput or when refused, and an interrupt ends the wait', async () => {
    const backend = createScriptedBackend({ execute: () => [{ type: 'input', prompt: 'Name? ' }] });
    session = await Session.create({ backend, timeoutMs: 500 });
    expect((await session.run('ask', { onInput: async () => 'ada' })).stdout).toBe('ada');
    expect((await session.run('ask')).error?.name).toBe('EOFError');
    expect((await session.run('ask', { onInput: () => Promise.reject(new Error('no')) })).error?.name).toBe('EOFError');
    const waiting = await session.run('ask', { onInput: () => new Promise<string>(() => {}) });
    expect(waiting).toMatchObject({ status: 'timeout' });
    expect(waiting.stateLost).toBeUndefined();
  });
});

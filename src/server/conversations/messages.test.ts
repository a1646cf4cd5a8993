/**
 * Questions to a scripted model in conversations, on the server's own logic:
 * approvals, cancel, model failures. Kernels answer from a script; a whole
 * analysis on a real sandbox is in test/server-conversations.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fold, lastTurn, readEvents, sse, waitFor } from '../../../test/support/conversation-events.js';
import { byCode, codeRun, printed } from '../../../test/support/kernel-script.js';
import { type Client, client, startScriptedServer } from '../../../test/support/server.js';
import { ModelResponseError } from '../../agents/errors.js';
import { ScriptedChatModel } from '../../agents/scripted-chat-model.js';
import type { Conversation, ConversationEvent } from '../../protocol/index.js';

type Server = Awaited<ReturnType<typeof startScriptedServer>>;

const kernel = byCode({
  'print("ran as written")': [printed('ran as written\n')],
  'print("edited by the user")': [printed('edited by the user\n')],
});

describe('conversations with a scripted model', () => {
  let server: Server;
  let api: Client;
  let model: ScriptedChatModel;

  beforeAll(async () => {
    model = new ScriptedChatModel();
    server = await startScriptedServer(kernel, { model, webRoot: false });
    api = client(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function newConversation(): Promise<string> {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    return `/v1/conversations/${conversation.id}`;
  }

  it('approval mode: code waits; run, edit and skip are applied; a second answer is a conflict', async () => {
    const base = await newConversation();
    model.enqueue(
      { toolCalls: [{ id: 'call_run', name: 'execute_python_code', arguments: { code: 'print("ran as written")' } }] },
      { toolCalls: [{ id: 'call_edit', name: 'execute_python_code', arguments: { code: 'print("model code")' } }] },
      { toolCalls: [{ id: 'call_skip', name: 'execute_python_code', arguments: { code: 'print("never")' } }] },
      { text: 'Done.' },
    );
    const response = await api(`${base}/messages`, {
      method: 'POST',
      json: { content: 'Run three things', approval: 'ask' },
      headers: { accept: 'text/event-stream' },
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const seen: ConversationEvent[] = [];
    const nextApproval = async (): Promise<Extract<ConversationEvent, { type: 'approval-request' }>> => {
      for (;;) {
        const block = buffer.indexOf('\n\n');
        if (block >= 0) {
          const event = JSON.parse(/^data: (.+)$/m.exec(buffer.slice(0, block))![1]!) as ConversationEvent;
          buffer = buffer.slice(block + 2);
          seen.push(event);
          if (event.type === 'approval-request') return event;
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended before an approval request');
        buffer += value;
      }
    };
    const first = await nextApproval();
    expect(first).toMatchObject({ callId: 'call_run', code: 'print("ran as written")' });
    // The conversation shows the waiting step to a client that reloads.
    const waiting = (await api.json<Conversation>(base)).turns[0]?.steps[0];
    expect(waiting).toMatchObject({ type: 'code', status: 'awaiting-approval', approvalId: first.approvalId });
    const approvalUrl = (id: string) => `${base}/approvals/${id}`;
    expect(await api.json(approvalUrl(first.approvalId), { method: 'POST', json: { decision: 'run' } })).toEqual({
      approvalId: first.approvalId,
      decision: 'run',
    });
    const again = await api(approvalUrl(first.approvalId), { method: 'POST', json: { decision: 'run' } });
    expect(again.status).toBe(409);
    const second = await nextApproval();
    const noCode = await api(approvalUrl(second.approvalId), { method: 'POST', json: { decision: 'edit' } });
    expect(noCode.status).toBe(400);
    await api.json(approvalUrl(second.approvalId), {
      method: 'POST',
      json: { decision: 'edit', code: 'print("edited by the user")' },
    });
    const third = await nextApproval();
    await api.json(approvalUrl(third.approvalId), { method: 'POST', json: { decision: 'skip', reason: 'not now' } });
    const unknown = await api(approvalUrl('00000000-0000-4000-8000-000000000000'), {
      method: 'POST',
      json: { decision: 'run' },
    });
    expect(unknown.status).toBe(404);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
    }
    const rest = buffer
      .split('\n\n')
      .filter((block) => block.trim())
      .map((block) => JSON.parse(/^data: (.+)$/m.exec(block)![1]!) as ConversationEvent);
    const turn = lastTurn([...seen, ...rest]);
    expect(fold([...seen, ...rest])).toEqual(turn);
    const steps = turn.steps.filter((step) => step.type === 'code');
    expect(steps.map((step) => [step.callId, step.status, step.stdout])).toEqual([
      ['call_run', 'ok', 'ran as written\n'],
      ['call_edit', 'ok', 'edited by the user\n'],
      ['call_skip', 'skipped', ''],
    ]);
    expect(steps[1]).toMatchObject({ code: 'print("model code")', ranCode: 'print("edited by the user")' });
    expect(codeRun(server.backend)).toEqual(['print("ran as written")', 'print("edited by the user")']);
    expect(steps[2]).toMatchObject({ skipReason: 'declined' });
    expect(steps.every((step) => step.approvalId === undefined)).toBe(true);
    // The model was told about the edit and the skip (with the reason).
    const toolMessages = JSON.stringify(model.calls[model.calls.length - 1]?.messages);
    expect(toolMessages).toMatch(/edited/i);
    expect(toolMessages).toMatch(/not now/);
  });

  it('cancel while code waits for approval skips it and ends the turn as cancelled', async () => {
    const base = await newConversation();
    model.enqueue({ toolCalls: [{ name: 'execute_python_code', arguments: { code: 'print(1)' } }] });
    const running = sse(api, `${base}/messages`, { content: 'wait for me', approval: 'ask' });
    await waitFor(async () => {
      const step = (await api.json<Conversation>(base)).turns[0]?.steps[0];
      return step?.type === 'code' && step.status === 'awaiting-approval' ? step : undefined;
    }, 'the approval request');
    await api.json(`${base}/cancel`, { method: 'POST' });
    const turn = lastTurn(await readEvents(await running));
    expect(turn.status).toBe('cancelled');
    expect(turn.steps[0]).toMatchObject({ type: 'code', status: 'skipped' });
    expect((await api.json<Conversation>(base)).busy).toBe(false);
    expect(codeRun(server.backend)).not.toContain('print(1)');
  });

  it('a model that fails ends the turn with a typed error; the conversation goes on', async () => {
    const base = await newConversation();
    model.enqueue(
      new ModelResponseError('The OpenAI-compatible server answered HTTP 400: This model does not exist.', {
        status: 400,
      }),
      { text: 'Back again.' },
    );
    const failed = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'hello' })));
    expect(failed.status).toBe('error');
    expect(failed.error?.code).toBe('model-error');
    expect(failed.error?.message).toMatch(/does not exist/);
    const ok = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'hello again' })));
    expect(ok.status).toBe('done');
    expect(ok.steps).toEqual([{ type: 'text', text: 'Back again.' }]);
  });
});

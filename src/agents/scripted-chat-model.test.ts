import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AbortError } from '../errors.js';
import { Agent } from './agent.js';
import { ModelResponseError } from './errors.js';
import type { ChatRequest } from './model.js';
import { ScriptedChatModel } from './scripted-chat-model.js';
import { defineTool } from './tool.js';

const ask = (content: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  instructions: 'Be brief.',
  messages: [{ role: 'user', content }],
  tools: [],
  ...extra,
});

describe('ScriptedChatModel', () => {
  it('answers in order, turning scripted tool calls into the ChatResponse an adapter returns', async () => {
    const model = new ScriptedChatModel({
      responses: [
        {
          text: 'Let me look.',
          toolCalls: [
            { name: 'lookup', arguments: { key: 'a' } },
            { id: 'mine', name: 'x', arguments: '{bad' },
          ],
        },
        { text: 'Done.', usage: { inputTokens: 7, outputTokens: 3 } },
        { text: 'No usage.', usage: null, finishReason: 'length' },
      ],
    });
    expect(model).toMatchObject({ provider: 'scripted', model: 'scripted', remaining: 3 });
    expect(await model.complete(ask('one'))).toEqual({
      text: 'Let me look.',
      toolCalls: [
        { id: 'call_1_0', name: 'lookup', arguments: '{"key":"a"}' },
        { id: 'mine', name: 'x', arguments: '{bad' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 100, outputTokens: 10 },
    });
    expect(await model.complete(ask('two'))).toEqual({
      text: 'Done.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 7, outputTokens: 3 },
    });
    expect(await model.complete(ask('three'))).toMatchObject({ finishReason: 'length', usage: undefined });
    expect(model.remaining).toBe(0);
  });

  it('records what each call was sent, as it was at the time of the call', async () => {
    const model = new ScriptedChatModel({ responses: [{ text: 'a' }, { text: 'b' }] });
    const messages: ChatRequest['messages'][number][] = [{ role: 'user', content: 'first' }];
    const tools = [{ name: 'lookup', description: 'Looks up.', parameters: { type: 'object' } }];
    await model.complete({ instructions: 'Be brief.', messages, tools, toolChoice: 'auto', onTextDelta: () => {} });
    messages.push({ role: 'assistant', content: 'a' }, { role: 'user', content: 'second' });
    await model.complete({ instructions: 'Be brief.', messages, tools, toolChoice: 'none' });
    expect(model.calls).toHaveLength(2);
    expect(model.calls[0]).toEqual({
      instructions: 'Be brief.',
      messages: [{ role: 'user', content: 'first' }],
      tools,
      toolChoice: 'auto',
    });
    expect(model.calls[1]!.messages).toHaveLength(3);
    expect(model.calls[1]!.toolChoice).toBe('none');
  });

  it('streams answer text in small deltas, or in one when not streaming', async () => {
    const text = 'Higher fines go with fewer accidents.';
    const streamed: string[] = [];
    await new ScriptedChatModel({ responses: [{ text }] }).complete(
      ask('q', { onTextDelta: (delta) => streamed.push(delta) }),
    );
    expect(streamed.length).toBeGreaterThan(1);
    expect(streamed.join('')).toBe(text);
    const whole: string[] = [];
    await new ScriptedChatModel({ responses: [{ text }], stream: false }).complete(
      ask('q', { onTextDelta: (delta) => whole.push(delta) }),
    );
    expect(whole).toEqual([text]);
  });

  it('answers with a function, given each call and its index; a function cannot be enqueued to', async () => {
    const model = new ScriptedChatModel({
      provider: 'openai',
      model: 'gpt-test',
      responses: (call, index) => ({ text: `${index}: ${call.messages.at(-1)?.content}` }),
    });
    expect(model).toMatchObject({ provider: 'openai', model: 'gpt-test' });
    expect((await model.complete(ask('hello'))).text).toBe('0: hello');
    expect((await model.complete(ask('again'))).text).toBe('1: again');
    expect(() => model.enqueue({ text: 'x' })).toThrow(/function/);
  });

  it('throws a scripted error, as a failing provider would', async () => {
    const failure = new ModelResponseError('The provider answered HTTP 400: no such model.', { status: 400 });
    const model = new ScriptedChatModel({ responses: [failure, { text: 'Back again.' }] });
    await expect(model.complete(ask('q'))).rejects.toBe(failure);
    expect((await model.complete(ask('q'))).text).toBe('Back again.');
  });

  it('running out of script is a clear error naming how many were scripted and what was asked', async () => {
    const model = new ScriptedChatModel({ responses: [{ text: 'only one' }] });
    await model.complete(ask('first'));
    await expect(model.complete(ask('What is the second question?'))).rejects.toThrow(
      'call 2 asked for a response, but only 1 was scripted. It was asked: user: "What is the second question?"',
    );
    model.enqueue({ text: 'more' }, { text: 'and more' });
    expect(model.remaining).toBe(2);
    expect((await model.complete(ask('third'))).text).toBe('more');
    await model.complete(ask('fourth'));
    await expect(model.complete(ask('fifth'))).rejects.toThrow('only 3 were scripted');
  });

  it('honours the abort signal: before the call, while the answer is awaited, and while it streams', async () => {
    const before = new ScriptedChatModel({ responses: [{ text: 'never' }] });
    await expect(before.complete(ask('q', { signal: AbortSignal.abort() }))).rejects.toBeInstanceOf(AbortError);
    expect(before.calls).toHaveLength(1);

    const thinking = new ScriptedChatModel({ responses: () => new Promise(() => {}) });
    const stop = new AbortController();
    const pending = thinking.complete(ask('q', { signal: stop.signal }));
    stop.abort();
    await expect(pending).rejects.toThrow('The model request was aborted.');

    const streaming = new ScriptedChatModel({ responses: [{ text: 'x'.repeat(200) }] });
    const midway = new AbortController();
    const deltas: string[] = [];
    const streamed = streaming.complete(
      ask('q', {
        signal: midway.signal,
        onTextDelta: (delta) => {
          deltas.push(delta);
          if (deltas.length === 2) midway.abort();
        },
      }),
    );
    await expect(streamed).rejects.toBeInstanceOf(AbortError);
    expect(deltas).toHaveLength(2);
  });

  it('drives an Agent: tool calls run, their results go back to the model, the answer streams', async () => {
    const model = new ScriptedChatModel({
      responses: [{ toolCalls: [{ id: 'call_add', name: 'add', arguments: { a: 2, b: 40 } }] }, { text: 'It is 42.' }],
    });
    const add = defineTool({
      name: 'add',
      description: 'Adds two numbers.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => String(a + b),
    });
    const events: string[] = [];
    const agent = new Agent({
      name: 'adder',
      model,
      instructions: 'Add.',
      tools: [add],
      onEvent: (event) => events.push(event.type),
    });
    const answer = await agent.ask('2 + 40?');
    expect(answer).toMatchObject({ text: 'It is 42.', stopReason: 'answer', steps: 2 });
    expect(model.calls[0]!.tools.map((tool) => tool.name)).toEqual(['add']);
    expect(model.calls[1]!.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'call_add', content: '42' });
    expect(events).toContain('answer-delta');
  });
});

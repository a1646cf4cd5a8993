import { describe, expect, it } from 'vitest';
import { ChatMessages } from './chat-messages.js';

const call = (id: string) => ({ id, name: 'execute_python_code', arguments: '{"code": "print(1)"}' });

describe('ChatMessages', () => {
  it('trims old tool outputs first, keeping the current turn whole', () => {
    const history = new ChatMessages({ maxChars: 3000 });
    history.add({ role: 'user', content: 'first' }, { role: 'assistant', content: '', toolCalls: [call('a')] });
    history.add({ role: 'tool', toolCallId: 'a', name: 'execute_python_code', content: 'x'.repeat(2500) });
    history.add({ role: 'assistant', content: 'answer one' }, { role: 'user', content: 'second' });
    history.add({ role: 'assistant', content: '', toolCalls: [call('b')] });
    history.add({ role: 'tool', toolCallId: 'b', name: 'execute_python_code', content: 'y'.repeat(1500) });
    const [, , oldTool, , , , newTool] = history.messages;
    expect(oldTool?.content).toMatch(/^x{400}\n\[… 2100 more characters of this earlier output were trimmed/);
    expect(newTool?.content).toBe('y'.repeat(1500));
    expect(history.chars).toBeLessThanOrEqual(3000);
    expect(history.droppedTurns).toBe(0);
  });

  it('drops whole old turns when trimming is not enough, never splitting a call from its result', () => {
    const history = new ChatMessages({ maxChars: 1000 });
    for (let turn = 0; turn < 5; turn++) {
      history.add({ role: 'user', content: `question ${turn} ${'q'.repeat(300)}` });
      history.add({ role: 'assistant', content: '', toolCalls: [call(`c${turn}`)] });
      history.add({ role: 'tool', toolCallId: `c${turn}`, name: 'execute_python_code', content: 'ok' });
      history.add({ role: 'assistant', content: `answer ${turn}` });
    }
    expect(history.chars).toBeLessThanOrEqual(1000);
    expect(history.droppedTurns).toBeGreaterThan(0);
    expect(history.messages[0]?.role).toBe('user');
    expect(history.messages.at(-1)?.content).toBe('answer 4');
    const calls = history.messages.flatMap((message) =>
      message.role === 'assistant' ? (message.toolCalls ?? []).map((c) => c.id) : [],
    );
    const results = history.messages.flatMap((message) => (message.role === 'tool' ? [message.toolCallId] : []));
    expect(results).toEqual(calls);
  });
});

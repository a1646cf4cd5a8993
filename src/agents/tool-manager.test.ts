import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SandboxCrashedError } from '../errors.js';
import { defineTool, toToolDefinition } from './tool.js';
import { ToolManager } from './tool-manager.js';

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers.',
  parameters: z.object({ a: z.number(), b: z.number().describe('the second') }),
  run: ({ a, b }) => String(a + b),
});

describe('ToolManager', () => {
  it('describes tools with a JSON schema from zod', () => {
    expect(toToolDefinition(add)).toEqual({
      name: 'add',
      description: 'Adds two numbers.',
      parameters: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number', description: 'the second' } },
        required: ['a', 'b'],
      },
    });
  });

  it('runs every call in order and answers each id; mistakes go back as tool errors', async () => {
    const manager = new ToolManager([add]);
    const { messages } = await manager.runAll([
      { id: '1', name: 'add', arguments: '{"a": 1, "b": 2}' },
      { id: '2', name: 'add', arguments: '{"a": 1, "b": ' },
      { id: '3', name: 'add', arguments: '{"a": "one", "b": 2}' },
      { id: '4', name: 'subtract', arguments: '{}' },
    ]);
    expect(
      messages.map((message) => message.role === 'tool' && [message.toolCallId, message.isError ?? false]),
    ).toEqual([
      ['1', false],
      ['2', true],
      ['3', true],
      ['4', true],
    ]);
    expect(messages[0]!.content).toBe('3');
    expect(messages[1]!.content).toContain('not valid JSON');
    expect(messages[2]!.content).toContain('a: Invalid input: expected number');
    expect(messages[3]!.content).toContain('There is no tool named "subtract". Available tools: add.');
  });

  it('reports a tool that throws to the model, but lets infrastructure failures through', async () => {
    const manager = new ToolManager([
      defineTool({
        name: 'broken',
        description: '',
        parameters: z.object({}),
        run: () => {
          throw new Error('disk full');
        },
      }),
      defineTool({
        name: 'crash',
        description: '',
        parameters: z.object({}),
        run: () => {
          throw new SandboxCrashedError('gone');
        },
      }),
    ]);
    expect(await manager.run({ id: '1', name: 'broken', arguments: '' })).toEqual({
      content: 'broken failed: disk full',
      isError: true,
    });
    await expect(manager.run({ id: '2', name: 'crash', arguments: '{}' })).rejects.toBeInstanceOf(SandboxCrashedError);
  });

  it('checks names', () => {
    expect(() => defineTool({ ...add, name: 'no spaces' })).toThrow('A tool name is');
    expect(() => new ToolManager([add, add])).toThrow('already registered');
  });
});

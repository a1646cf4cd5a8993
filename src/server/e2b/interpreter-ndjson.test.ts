import { describe, expect, it } from 'vitest';
import type { Execution } from '../../session/execution.js';
import { asciiJson, closingLines, interpreterStream, outputLine, resultLine } from './interpreter-ndjson.js';

describe("E2B's execution lines", () => {
  it('gives every format its field, other types to extra, and marks the main result', () => {
    const line = resultLine({
      type: 'execute_result',
      data: {
        'text/plain': "'hello'",
        'text/html': '<b>hello</b>',
        'image/png': 'iVBORw0KGgo=',
        'application/json': { a: 1 },
        'application/vnd.custom+json': { b: 2 },
      },
      metadata: {},
    });
    expect(line).toEqual({
      type: 'result',
      text: 'hello',
      html: '<b>hello</b>',
      png: 'iVBORw0KGgo=',
      json: { a: 1 },
      extra: { 'application/vnd.custom+json': { b: 2 } },
      is_main_result: true,
    });
    const figure = resultLine({ type: 'display_data', data: { 'image/png': 'AAAA' }, metadata: {} });
    expect(figure).toEqual({ type: 'result', png: 'AAAA', is_main_result: false });
  });

  it('takes single quotes off a text, as E2B does, and leaves double quotes and inner quotes', () => {
    const text = (plain: string) => {
      const line = resultLine({ type: 'execute_result', data: { 'text/plain': plain }, metadata: {} });
      return line.type === 'result' ? line.text : undefined;
    };
    expect(text("'abc'")).toBe('abc');
    expect(text('"it\'s"')).toBe('"it\'s"');
    expect(text('"abc"')).toBe('"abc"');
    expect(text("'it\\'s'")).toBe("it\\'s");
    expect(text("[1] 'a'")).toBe("[1] 'a'");
    expect(text("'")).toBe('');
  });

  it('stamps output lines with an ISO time, which the Python SDK requires', () => {
    const line = outputLine('stdout', 'hi\n', new Date('2026-01-02T03:04:05.678Z'));
    expect(line).toEqual({ type: 'stdout', text: 'hi\n', timestamp: '2026-01-02T03:04:05.678Z' });
  });

  it('ends with the execution count, the error with its traceback as one string, and end_of_execution', () => {
    const execution = {
      status: 'error',
      executionCount: 3,
      error: { name: 'ValueError', value: 'boom', traceback: ['Traceback (most recent call last):', '  line 1'] },
    } as Execution;
    expect(closingLines(execution)).toEqual([
      { type: 'number_of_executions', execution_count: 3 },
      {
        type: 'error',
        name: 'ValueError',
        value: 'boom',
        traceback: 'Traceback (most recent call last):\n  line 1\nValueError: boom',
      },
      { type: 'end_of_execution' },
    ]);
  });

  it('writes pure ASCII that reads back as the same text, so no chunk boundary or line splitter can cut a character', () => {
    const text = 'héllo ✓ 😀 \u2028 \u0085 \u007f end';
    const written = asciiJson({ type: 'stdout', text });
    expect(written).toMatch(/^[\x20-\x7e]*$/);
    expect(JSON.parse(written).text).toBe(text);
  });

  it('sends keepalives while quiet, one JSON object a line, and never an empty line', async () => {
    const response = interpreterStream(async (send) => {
      send(outputLine('stdout', 'a'));
      await new Promise((resolve) => setTimeout(resolve, 120));
      send({ type: 'end_of_execution' });
    }, 20);
    const text = await response.text();
    const lines = text.split('\n');
    expect(lines.pop()).toBe('');
    const types = lines.map((line) => JSON.parse(line).type);
    expect(types[0]).toBe('stdout');
    expect(types.at(-1)).toBe('end_of_execution');
    expect(types).toContain('keepalive');
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
  });
});

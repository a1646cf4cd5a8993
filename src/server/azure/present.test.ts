import { describe, expect, it } from 'vitest';
import type { Execution, ExecutionResult } from '../../session/execution.js';
import { azureResult, azureStatus, azureStderr, pythonValueAsJson } from './present.js';

const value = (text: string, extra: Record<string, unknown> = {}): ExecutionResult => ({
  type: 'execute_result',
  data: { 'text/plain': text, ...extra },
  metadata: {},
});

const execution = (overrides: Partial<Execution>): Execution => ({
  status: 'ok',
  context: 'python',
  language: 'python',
  stdout: '',
  stderr: '',
  results: [],
  executionCount: 1,
  durationMs: 1,
  ...overrides,
});

describe('the last value as JSON (Azure `result`)', () => {
  it.each([
    ['42', 42],
    ['-3.5', -3.5],
    ['1e+100', 1e100],
    ['True', true],
    ['False', false],
    ['None', null],
    ["'text'", 'text'],
    ['"it\'s"', "it's"],
    ["'a\\nb\\t\\\\c'", 'a\nb\t\\c'],
    ["'caf\\xe9 \\u263a \\U0001f600'", 'café ☺ 😀'],
    ['[1, 2]', '[1, 2]'],
    ["{'a': 1}", "{'a': 1}"],
    ['nan', 'nan'],
    ["'unterminated", "'unterminated"],
    ["'a' 'b'", "'a' 'b'"],
    ['123456789012345678901234567890', 1.2345678901234568e29],
  ])('%s → %j', (text, expected) => {
    expect(pythonValueAsJson(value(text))).toEqual(expected);
  });

  it('prefers an application/json representation, and is "" without a value', () => {
    expect(pythonValueAsJson(value('{…}', { 'application/json': { a: [1] } }))).toEqual({ a: [1] });
    expect(pythonValueAsJson(undefined)).toBe('');
  });

  it('is an image object when the run made a figure', () => {
    const figure: ExecutionResult = { type: 'display_data', data: { 'image/png': 'iVBORw0=' }, metadata: {} };
    expect(azureResult(execution({ results: [figure, value('1')] }))).toEqual({
      type: 'image',
      format: 'png',
      base64_data: 'iVBORw0=',
    });
  });
});

describe('Azure status and stderr', () => {
  it('maps statuses and appends the traceback to stderr', () => {
    expect(azureStatus(execution({}))).toBe('Success');
    expect(azureStatus(execution({ status: 'timeout' }))).toBe('Timeout');
    const failed = execution({
      status: 'error',
      stderr: 'warning\n',
      error: { name: 'ValueError', value: 'bad', traceback: ['Traceback (most recent call last):', 'ValueError: bad'] },
    });
    expect(azureStatus(failed)).toBe('Failure');
    expect(azureStderr(failed)).toBe('warning\nTraceback (most recent call last):\nValueError: bad\n');
    expect(azureStderr(execution({ stderr: 'only' }))).toBe('only');
  });
});

import { describe, expect, it } from 'vitest';
import { formatTraceback } from './execution.js';

describe('formatTraceback', () => {
  it('keeps a traceback that already ends with the error', () => {
    const traceback = ['Traceback (most recent call last)', 'ZeroDivisionError: division by zero'];
    expect(formatTraceback({ name: 'ZeroDivisionError', value: 'division by zero', traceback })).toBe(
      traceback.join('\n'),
    );
  });

  it('adds the error when the traceback is of something else (a timeout interrupt)', () => {
    const text = formatTraceback({ name: 'TimeoutError', value: 'too slow', traceback: ['KeyboardInterrupt: '] });
    expect(text).toBe('KeyboardInterrupt:\nTimeoutError: too slow');
  });

  it('keeps a JavaScript stack, which starts with the error, without naming it again', () => {
    const traceback = ['Error: boom', '    at <cell-1>:1:7', '        throw new Error("boom")', '              ^'];
    expect(formatTraceback({ name: 'Error', value: 'boom', traceback })).toBe(traceback.join('\n'));
  });

  it('falls back to name and value without a traceback', () => {
    expect(formatTraceback({ name: 'KernelDied', value: 'gone', traceback: [] })).toBe('KernelDied: gone');
  });
});

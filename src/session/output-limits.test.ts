import { describe, expect, it } from 'vitest';
import { boundedError, cutText, cutTraceback, headBytes, messageLimits } from './output-limits.js';

describe('output limits', () => {
  it('cuts text on a character boundary, within the bound, note included', () => {
    expect(headBytes('abcé', 4)).toBe('abc');
    const { text, cut } = cutText('é'.repeat(10_000), 500, 'error value');
    expect(cut).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(500);
    expect(text).toMatch(/^é+\n\[sandcell cut this error value: 20000 bytes, the first \d+ kept/);
    expect(cutText('short', 500, 'error value')).toEqual({ text: 'short', cut: false });
  });

  it('keeps the end of a traceback: the error line (cut) and the innermost frames', () => {
    const entries = Array.from({ length: 100 }, (_, index) => `frame ${index} ${'.'.repeat(100)}`);
    entries.push(`RecursionError: ${'x'.repeat(10_000)}`);
    const { traceback, cut } = cutTraceback(entries, 2000);
    expect(cut).toBe(true);
    expect(Buffer.byteLength(traceback.join(''))).toBeLessThanOrEqual(2000);
    expect(traceback[0]).toMatch(/^\[sandcell cut \d+ earlier traceback entries/);
    expect(traceback.at(-2)).toBe(entries.at(-2));
    expect(traceback.at(-1)).toMatch(/^RecursionError: x+\n\[sandcell cut this traceback line/);
  });

  it('keeps an error within its bounds untouched', () => {
    const error = { name: 'KeyError', value: "'k'", traceback: ["KeyError: 'k'"] };
    expect(boundedError(error, 100)).toEqual({ error, cut: false });
  });

  it('bounds lines by what an honest kernel sends: an execution event, or a file in base64 while a reply is due', () => {
    const limits = messageLimits({ outputBytes: 1 << 20, resultBytes: 32 << 20, fileTransferBytes: 64 << 20 });
    expect(limits.executionMessageBytes).toBe(33 << 20);
    expect(limits.replyMessageBytes).toBeGreaterThan(Math.ceil(((64 << 20) * 4) / 3));
    expect(limits.replyMessageBytes).toBeLessThan(88 << 20);
  });
});

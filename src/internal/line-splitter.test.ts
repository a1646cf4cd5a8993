import { describe, expect, it } from 'vitest';
import { LineSplitter, LineTooLongError } from './line-splitter.js';

describe('LineSplitter', () => {
  it('joins lines split across chunks and keeps multi-byte characters whole', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter(100, (line) => lines.push(line));
    const bytes = Buffer.from('{"a":"é"}\n{"b":1}\n{"c"', 'utf8');
    for (const byte of bytes) splitter.push(Buffer.from([byte]));
    splitter.push(Buffer.from(':2}\n'));
    expect(lines).toEqual(['{"a":"é"}', '{"b":1}', '{"c":2}']);
  });

  it('refuses a line longer than the bound, even without a newline', () => {
    const splitter = new LineSplitter(10, () => undefined);
    expect(() => splitter.push(Buffer.alloc(11, 0x61))).toThrow(LineTooLongError);
    expect(() => splitter.push(Buffer.from(`${'b'.repeat(11)}\n`))).toThrow(LineTooLongError);
  });
});

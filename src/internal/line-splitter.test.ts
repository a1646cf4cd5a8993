import { describe, expect, it } from 'vitest';
import { LineSplitter } from './line-splitter.js';

function collect(maxLineBytes: number) {
  const lines: [string, number][] = [];
  const oversized: number[] = [];
  const splitter = new LineSplitter(
    () => maxLineBytes,
    (line, bytes) => lines.push([line, bytes]),
    (bytes) => oversized.push(bytes),
  );
  return { splitter, lines, oversized };
}

describe('LineSplitter', () => {
  it('joins lines split across chunks and keeps multi-byte characters whole', () => {
    const { splitter, lines } = collect(100);
    const bytes = Buffer.from('{"a":"é"}\n{"b":1}\n{"c"', 'utf8');
    for (const byte of bytes) splitter.push(Buffer.from([byte]));
    splitter.push(Buffer.from(':2}\n'));
    expect(lines).toEqual([
      ['{"a":"é"}', 10],
      ['{"b":1}', 7],
      ['{"c":2}', 7],
    ]);
  });

  it('skips a line longer than the bound without keeping it, and goes on with the next', () => {
    const { splitter, lines, oversized } = collect(10);
    splitter.push(Buffer.from('short\n'));
    splitter.push(Buffer.from('b'.repeat(8)));
    for (let index = 0; index < 1000; index++) splitter.push(Buffer.alloc(1024, 0x61));
    splitter.push(Buffer.from('tail\nafter\nexactly10b\n'));
    expect(lines).toEqual([
      ['short', 5],
      ['after', 5],
      ['exactly10b', 10],
    ]);
    expect(oversized).toEqual([8 + 1000 * 1024 + 4]);
  });

  it('asks for the bound as bytes arrive, so it can widen while a large line is expected', () => {
    let bound = 4;
    const lines: string[] = [];
    const splitter = new LineSplitter(
      () => bound,
      (line) => lines.push(line),
      () => lines.push('(dropped)'),
    );
    splitter.push(Buffer.from('123456\n'));
    bound = 8;
    splitter.push(Buffer.from('123456\n'));
    expect(lines).toEqual(['(dropped)', '123456']);
  });
});

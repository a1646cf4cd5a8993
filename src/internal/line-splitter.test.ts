import { describe, expect, it } from 'vitest';
import { joinParts, LineSplitter } from './line-splitter.js';

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

  it('gives the raw bytes a line announces whole, newlines and all, then reads lines again', () => {
    const events: string[] = [];
    const splitter: LineSplitter = new LineSplitter(
      () => 100,
      (line) => {
        events.push(`line ${line}`);
        const announced = /^frame (\d+)$/.exec(line);
        if (announced)
          splitter.expectBytes(Number(announced[1]), (parts) =>
            events.push(`bytes ${joinParts(parts).toString('hex')}`),
          );
      },
      () => events.push('(dropped)'),
    );
    // Split anywhere: the frame's bytes (which hold a newline) across chunks, a line right behind them.
    const wire = Buffer.concat([
      Buffer.from('frame 5\n'),
      Buffer.from([0x61, 0x0a, 0x00, 0xff, 0x62]),
      Buffer.from('after\nframe 0\nlast\n'),
    ]);
    for (const cut of [1, 9, 11, wire.length]) {
      events.length = 0;
      splitter.push(wire.subarray(0, cut));
      splitter.push(wire.subarray(cut));
      expect(events).toEqual(['line frame 5', 'bytes 610a00ff62', 'line after', 'line frame 0', 'bytes ', 'line last']);
    }
  });
});

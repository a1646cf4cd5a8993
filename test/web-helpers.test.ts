/**
 * The web UI's pure helpers, in Node: the SSE parser that reads streamed turns
 * and the ANSI converter for tracebacks. (Everything that needs a DOM is
 * tested in a real browser by web-ui.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { EventStreamParser } from '../web/src/event-stream.js';
import { ansiSegments, stripAnsi } from '../web/src/render/ansi.js';

function parse(chunks: string[], end = true): string[] {
  const events: string[] = [];
  const parser = new EventStreamParser((data) => events.push(data));
  for (const chunk of chunks) parser.push(chunk);
  if (end) parser.end();
  return events;
}

describe('EventStreamParser', () => {
  it('reads event/data blocks, joins multi-line data, ignores comments and other fields', () => {
    const text =
      ': keep-alive\n\nevent: turn-start\ndata: {"a":1}\n\nid: 7\nretry: 10\ndata: line one\ndata:line two\n\n';
    expect(parse([text])).toEqual(['{"a":1}', 'line one\nline two']);
  });

  it('handles events split anywhere across chunks, and CRLF or CR line ends', () => {
    const text = 'event: x\r\ndata: {"n":1}\r\n\r\ndata: {"n":2}\r\rdata: {"n":3}\n\n';
    const whole = parse([text]);
    expect(whole).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    for (let cut = 1; cut < text.length; cut++) {
      expect(parse([text.slice(0, cut), text.slice(cut)])).toEqual(whole);
    }
    expect(parse(text.split(''))).toEqual(whole);
  });

  it('does not hand over an unfinished event until the stream ends', () => {
    expect(parse(['data: {"partial":true}'], false)).toEqual([]);
    expect(parse(['data: {"partial":true}'], true)).toEqual(['{"partial":true}']);
    expect(parse(['event: only-a-type\n\n'])).toEqual([]);
  });
});

describe('ANSI codes', () => {
  const red = '\u001b[0;31m';
  const reset = '\u001b[0m';

  it('turns SGR colours and bold into classes and keeps the text exact', () => {
    const segments = ansiSegments(`${red}ZeroDivisionError${reset}: division by zero\n\u001b[1;32mok\u001b[22m!`);
    expect(segments).toEqual([
      { text: 'ZeroDivisionError', className: 'ansi-fg-red' },
      { text: ': division by zero\n', className: '' },
      { text: 'ok', className: 'ansi-fg-green ansi-bold' },
      { text: '!', className: 'ansi-fg-green' },
    ]);
  });

  it('drops cursor movement, OSC titles and 256/true-colour arguments without leaking digits', () => {
    const text = '\u001b]0;title\u0007a\u001b[2Kb\u001b[38;5;208mc\u001b[48;2;1;2;3md\u001b[39;49me';
    expect(stripAnsi(text)).toBe('abcde');
    expect(
      ansiSegments(text)
        .map((segment) => segment.text)
        .join(''),
    ).toBe('abcde');
    expect(ansiSegments('\u001b[94mbright\u001b[0m')).toEqual([{ text: 'bright', className: 'ansi-fg-bright-blue' }]);
  });

  it('leaves plain text alone', () => {
    expect(ansiSegments('no codes <b>here</b>')).toEqual([{ text: 'no codes <b>here</b>', className: '' }]);
    expect(ansiSegments('')).toEqual([]);
  });
});

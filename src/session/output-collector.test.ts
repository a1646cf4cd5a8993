import { describe, expect, it } from 'vitest';
import { OutputCollector } from './output-collector.js';

describe('OutputCollector', () => {
  it('keeps stdout and stderr apart and passes them to the callbacks', () => {
    const seen: string[] = [];
    const collector = new OutputCollector(100, 100, {
      onStdout: (text) => seen.push(`out:${text}`),
      onStderr: (text) => seen.push(`err:${text}`),
    });
    collector.stream('stdout', 'a');
    collector.stream('stderr', 'b');
    expect([collector.stdout, collector.stderr, seen]).toEqual(['a', 'b', ['out:a', 'err:b']]);
  });

  it('cuts output at the byte cap on a character boundary', () => {
    const collector = new OutputCollector(5, 100, {});
    collector.stream('stdout', 'abcé');
    collector.stream('stdout', 'ééé');
    expect(Buffer.byteLength(collector.stdout)).toBeLessThanOrEqual(5);
    expect(collector.stdout).toBe('abcé');
    expect(collector.truncated).toBe(true);
  });

  it('counts results by the size of the message they came in, metadata included; drops what is over', () => {
    const collector = new OutputCollector(100, 1000, {});
    collector.result('display_data', { 'text/plain': 'x' }, { small: true }, 400);
    collector.result('display_data', { 'text/plain': 'y' }, {}, 601); // e.g. large metadata
    collector.result('display_data', { 'text/plain': 'z' }, {}, 600);
    expect(collector.results.map((result) => result.data['text/plain'])).toEqual(['x', 'z']);
    expect(collector.truncated).toBe(true);
  });

  it('cuts an error value and traceback to the output cap, with a note, and says so', () => {
    const collector = new OutputCollector(1000, 1000, {});
    collector.fail({
      name: 'ValueError',
      value: 'E'.repeat(50_000),
      traceback: ['frame 1', 'frame 2', `ValueError: ${'E'.repeat(50_000)}`],
    });
    const error = collector.error;
    expect(error?.name).toBe('ValueError');
    expect(Buffer.byteLength(error?.value ?? '')).toBeLessThanOrEqual(1000);
    expect(error?.value).toMatch(/^E+\n\[sandcell cut this error value: 50000 bytes/);
    const traceback = error?.traceback ?? [];
    expect(traceback.slice(0, 2)).toEqual(['frame 1', 'frame 2']);
    expect(traceback.at(-1)).toMatch(/^ValueError: E+\n\[sandcell cut this traceback line/);
    expect(Buffer.byteLength(traceback.join(''))).toBeLessThanOrEqual(1000);
    expect(collector.truncated).toBe(true);

    const small = new OutputCollector(1000, 1000, {});
    small.fail({ name: 'KeyError', value: "'k'", traceback: ['KeyError: ' + "'k'"] });
    expect(small.error).toEqual({ name: 'KeyError', value: "'k'", traceback: ["KeyError: 'k'"] });
    expect(small.truncated).toBe(false);
  });

  it('marks the output cut when a message was dropped unread', () => {
    const collector = new OutputCollector(100, 100, {});
    collector.dropped();
    expect(collector.truncated).toBe(true);
  });
});

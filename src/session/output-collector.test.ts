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
    collector.stream('bogus', 'c');
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

  it('drops results past their cap and ignores malformed ones', () => {
    const collector = new OutputCollector(100, 40, {});
    collector.result('display_data', { 'text/plain': 'x'.repeat(10) }, {});
    collector.result('display_data', { 'text/plain': 'y'.repeat(31) }, {});
    collector.result('display_data', 'not a bundle', {});
    expect(collector.results).toHaveLength(1);
    expect(collector.truncated).toBe(true);
  });
});

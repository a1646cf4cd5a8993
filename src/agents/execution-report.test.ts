import { describe, expect, it } from 'vitest';
import { boundText, formatExecutionReport } from './execution-report.js';

describe('execution report', () => {
  it('keeps the head and tail of long text and says how much was cut', () => {
    const text = `${'a'.repeat(5000)}${'z'.repeat(5000)}`;
    const bounded = boundText(text, 1000);
    expect(bounded.length).toBeLessThanOrEqual(1000);
    expect(bounded.startsWith('aaa')).toBe(true);
    expect(bounded.endsWith('zzz')).toBe(true);
    expect(bounded).toMatch(/\[… \d+ characters cut …\]/);
    expect(boundText('short', 1000)).toBe('short');
  });

  it('describes images by name and size and never includes their data', () => {
    const report = formatExecutionReport({
      execution: {
        status: 'ok',
        context: 'python',
        language: 'python',
        stdout: '',
        stderr: '',
        results: [
          { type: 'display_data', data: { 'image/png': 'iVBORw0KGgoAAAA', 'text/plain': '<Figure>' }, metadata: {} },
        ],
        executionCount: 1,
        durationMs: 10,
      },
      attempt: 1,
      maxAttempts: 3,
      files: [{ path: 'figure-1.png', size: 2048, kind: 'figure' }],
      figureNotes: new Map([['figure-1.png', 'PNG, 640×480 px']]),
    });
    expect(report).toContain('saved as /mnt/data/figure-1.png (PNG, 640×480 px, 2 KiB)');
    expect(report).not.toContain('iVBOR');
    expect(report).not.toContain('<Figure>');
  });
});

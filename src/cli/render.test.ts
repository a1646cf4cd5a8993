import { describe, expect, it } from 'vitest';
import { commandCutNote, executionCutNote, filesNotShown, savedImageLine } from './render.js';

describe('a file the code saved and showed', () => {
  it('is said once, as an image, with what the file line would have said about a taken name', () => {
    const files = [
      { path: 'daily.csv', savedTo: 'out/daily.csv' },
      { path: 'daily.png', savedTo: 'out/daily-2.png', existing: 'out/daily.png' },
    ];
    const images = [{ file: 'out/daily-2.png' }];
    expect(savedImageLine(images[0] as { file: string }, files)).toBe(
      '[image saved to out/daily-2.png: out/daily.png already existed and was kept]',
    );
    expect(savedImageLine({ file: 'out/figure-1.png' }, files)).toBe('[image saved to out/figure-1.png]');
    expect(filesNotShown(files, images)).toEqual([files[0]]);
  });
});

describe('an output cut at a limit', () => {
  it('names the limit that cut it and the flag that raises it', () => {
    const printed = { stdout: 'x'.repeat(1024), stderr: '' };
    expect(executionCutNote(printed, { outputBytes: 1024 })).toBe(
      '[output was cut at 1 KiB, what an execution keeps of stdout and stderr; raise it with --max-output (e.g. --max-output 4K)]',
    );
    expect(executionCutNote({ stdout: 'short', stderr: '' })).toBe(
      '[results were cut at 32 MiB, what an execution keeps of results (charts, tables); raise it with --max-results (e.g. --max-results 128M)]',
    );
    const error = { name: 'ValueError', value: 'x\n[sandcell cut this error value: …]', traceback: [] };
    expect(executionCutNote({ stdout: '', stderr: '', error })).toContain('--max-output');
    expect(commandCutNote()).toBe(
      '[output was cut at 1 MiB, what a command keeps of its stdout and of its stderr; raise it with --max-output (e.g. --max-output 4M)]',
    );
  });
});

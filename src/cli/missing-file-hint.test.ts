import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Execution } from '../session/execution.js';
import { missingFileHint } from './missing-file-hint.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-missing-file-'));
mkdirSync(path.join(directory, 'project'));
writeFileSync(path.join(directory, 'project', 'data.csv'), 'a,b\n');
const script = path.join(directory, 'project', 'read.py');
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function failed(name: string, value: string): Execution {
  return {
    status: 'error',
    error: { name, value, traceback: [`${name}: ${value}`] },
    executionCount: 1,
    outputTruncated: false,
    stdout: '',
    stderr: '',
    results: [],
  } as unknown as Execution;
}

describe('the hint after a missing file', () => {
  it('names the --upload that brings in a file beside the script (Python, Node.js, /mnt/data paths)', () => {
    const python = failed('FileNotFoundError', "[Errno 2] No such file or directory: 'data.csv'");
    // The temporary directory is outside the working directory: the path shown is absolute.
    expect(missingFileHint(python, script, new Set())).toBe(
      `hint: data.csv is beside the script on this machine, not in the sandbox; add --upload ${path.join(directory, 'project', 'data.csv')}`,
    );
    const node = failed('Error', "ENOENT: no such file or directory, open '/mnt/data/data.csv'");
    expect(missingFileHint(node, script, new Set())).toContain('add --upload');
  });

  it('says nothing when the file was uploaded, is not beside the script, is in a folder, or the error is another', () => {
    const python = failed('FileNotFoundError', "[Errno 2] No such file or directory: 'data.csv'");
    expect(missingFileHint(python, script, new Set(['data.csv']))).toBeUndefined();
    expect(missingFileHint(python, path.join(directory, 'elsewhere.py'), new Set())).toBeUndefined();
    const nested = failed('FileNotFoundError', "[Errno 2] No such file or directory: 'project/data.csv'");
    expect(missingFileHint(nested, path.join(directory, 'x.py'), new Set())).toBeUndefined();
    expect(missingFileHint(failed('ValueError', 'data.csv'), script, new Set())).toBeUndefined();
  });
});

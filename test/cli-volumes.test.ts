/**
 * `sandcell volume` and `--volume` as a user runs them, the built CLI on real bubblewrap sandboxes: a
 * volume made, a directory copied in, mounted by `run` (read-only: nothing written) and by `exec`
 * (a sub-path, written), copied out, listed, and deleted; bad flags refused before any sandbox starts.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from './support/process.js';
import { removeStateDirectory } from './support/volumes.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cli-volumes-'));
const env = { SANDCELL_STATE_DIR: path.join(workspace, 'state') };
const sandcell = (...args: string[]) => runProcess(process.execPath, [bin, ...args], { cwd: workspace, env });

afterAll(() => removeStateDirectory(workspace));

describe('sandcell volume', () => {
  it('create, cp in, mount in run (read-only) and exec (a sub-path), cp out, list, rm', async () => {
    expect((await sandcell('volume', 'create', 'project')).stdout).toMatch(
      /^created volume project \(vol[0-9a-f]{20}\)\n$/,
    );
    mkdirSync(path.join(workspace, 'input', 'raw'), { recursive: true });
    writeFileSync(path.join(workspace, 'input', 'raw', 'numbers.csv'), 'n\n1\n2\n3\n');
    expect((await sandcell('volume', 'cp', 'input', 'project:/data')).stdout).toBe('copied 1 file(s), 8 B\n');

    writeFileSync(
      path.join(workspace, 'sum.py'),
      "import pandas as pd\nprint(pd.read_csv('/mnt/project/data/raw/numbers.csv')['n'].sum())\ntry:\n    open('/mnt/project/x', 'w')\nexcept OSError as e:\n    print(e.strerror)\n",
    );
    const run = await sandcell('run', '--volume', 'project:/mnt/project:ro', 'sum.py');
    expect(run.stdout).toBe('6\nRead-only file system\n');

    const exec = await sandcell(
      'exec',
      '-v',
      'project/data/raw:/mnt/raw',
      '--',
      'bash',
      '-c',
      'ls /mnt/raw; echo total=6 > /mnt/raw/total.txt',
    );
    expect([exec.code, exec.stdout]).toEqual([0, 'numbers.csv\n']);
    expect((await sandcell('volume', 'cp', 'project:/data', 'output')).code).toBe(0);
    expect(readFileSync(path.join(workspace, 'output', 'raw', 'total.txt'), 'utf8')).toBe('total=6\n');

    const listed = JSON.parse((await sandcell('volume', 'list', '--json')).stdout) as { volumes: { name: string }[] };
    expect(listed.volumes.map((volume) => volume.name)).toEqual(['project']);
    expect((await sandcell('volume', 'rm', 'project')).stdout).toBe('deleted volume project\n');
    expect((await sandcell('volume', 'list')).stdout).toMatch(/^no volumes/);
  });

  it('refuses a bad --volume, an unknown volume and a bad name before any sandbox starts, as usage errors', async () => {
    for (const args of [
      ['exec', '--volume', 'nothing-here', '--', 'true'],
      ['exec', '--volume', 'x:/etc', '--', 'true'],
      ['exec', '--volume', 'missing:/mnt/m', '--', 'true'],
      ['volume', 'create', '../up'],
      ['volume', 'rm', 'missing'],
      ['volume', 'cp', 'a', 'b'],
    ]) {
      const result = await sandcell(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).not.toBe('');
    }
  });
});

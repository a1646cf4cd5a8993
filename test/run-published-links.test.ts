/**
 * `sandcell run --store`: the built CLI, code in a real bubblewrap sandbox, and the files it saves
 * also published to object storage — S3 on s3rver, Azure Blob on Azurite — each with a signed
 * read-only link that downloads the same bytes without a key. A store that cannot link (a
 * directory, a wrong credential) is refused before any code runs; a store gone at the run's end
 * leaves the run and its local copy as they were, and says so.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Azurite, type S3Server, startAzurite, startS3rver } from './support/object-store-emulators.js';
import { type Finished, runProcess, startProcessGroup } from './support/process.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-run-links-'));
const HOUR_MS = 3_600_000;

let s3: S3Server;
let azurite: Azurite;
beforeAll(async () => {
  [s3, azurite] = await Promise.all([startS3rver(['sandcell']), startAzurite(['sandcell'])]);
}, 60_000);
afterAll(async () => {
  azurite?.stop();
  await s3?.stop();
  rmSync(workspace, { recursive: true, force: true });
});

/** A script in the workspace, by name. */
function script(name: string, code: string): string {
  const file = path.join(workspace, name);
  writeFileSync(file, code);
  return file;
}

function sandcell(args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return runProcess(process.execPath, [bin, ...args], { cwd: workspace, env: { SANDCELL_STORE: '', ...env } });
}

async function download(url: string): Promise<Buffer> {
  const answer = await fetch(url);
  expect(answer.status).toBe(200);
  return Buffer.from(await answer.arrayBuffer());
}

const REPORT = script(
  'report.py',
  'import os\nos.makedirs("tables", exist_ok=True)\n' +
    'open("tables/report.csv", "w").write("day,visitors\\nMon,120\\nTue,340\\n")\nprint("report written")\n',
);

describe('sandcell run --store', () => {
  it('--json: each saved file has a link that downloads it without a key, for --link-ttl', async () => {
    const before = Date.now();
    const result = await sandcell(
      ['run', REPORT, '--json', '-o', 'json-out', '--store', 's3://sandcell/cli', '--link-ttl', '2h'],
      s3.environment,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const execution = JSON.parse(result.stdout);
    expect(execution).toMatchObject({ status: 'ok', stdout: 'report written\n' });
    expect(execution.files).toEqual([
      {
        path: 'tables/report.csv',
        savedTo: path.join('json-out', 'tables', 'report.csv'),
        url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//),
        expiresAt: expect.any(String),
      },
    ]);
    const [file] = execution.files;
    const local = readFileSync(path.join(workspace, file.savedTo));
    expect(local.toString()).toBe('day,visitors\nMon,120\nTue,340\n');
    expect((await download(file.url)).equals(local)).toBe(true);
    const expiresAt = Date.parse(file.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 2 * HOUR_MS);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 2 * HOUR_MS);
  });

  it("without --json, a file's line shows its link and when it expires (Azure Blob, SANDCELL_STORE)", async () => {
    const before = Date.now();
    const result = await sandcell(['run', REPORT, '-o', 'human-out'], {
      AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString,
      SANDCELL_STORE: 'azure://devstoreaccount1/sandcell/cli',
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const line = /^\[file saved to human-out\/tables\/report\.csv; link: (http\S+) \(works until (\S+)\)\]$/m.exec(
      result.stdout,
    );
    expect(line, result.stdout).not.toBeNull();
    const [, url = '', expiresAt = ''] = line ?? [];
    expect(Date.parse(expiresAt)).toBeGreaterThanOrEqual(before + HOUR_MS);
    expect(Date.parse(expiresAt)).toBeLessThanOrEqual(Date.now() + HOUR_MS);
    expect((await download(url)).equals(readFileSync(path.join(workspace, 'human-out', 'tables', 'report.csv')))).toBe(
      true,
    );
  });

  it('refuses a directory store, which cannot sign links, before the code runs', async () => {
    const result = await sandcell(['run', REPORT, '-o', 'fs-out', '--store', 'fs:///tmp/x']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('sandcell run: --store fs:///tmp/x cannot sign links');
    expect(result.stdout).toBe('');
    expect(existsSync(path.join(workspace, 'fs-out'))).toBe(false);
  });

  it('a wrong credential fails before the code runs, naming the store', async () => {
    const result = await sandcell(
      ['run', REPORT, '-o', 'wrong-key-out', '--store', 'azure://devstoreaccount1/sandcell'],
      {
        AZURE_STORAGE_CONNECTION_STRING: azurite.connectionStringWithKey(randomBytes(64).toString('base64')),
      },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('sandcell run: cannot publish files to azure://devstoreaccount1/sandcell:');
    expect(`${result.stdout}${result.stderr}`).not.toContain('report written');
    expect(existsSync(path.join(workspace, 'wrong-key-out'))).toBe(false);
  });

  it('a store gone at the end of the run leaves the run and its local copy as they were, and says so', async () => {
    const code = script(
      'slow-report.py',
      'import time\nprint("ready", flush=True)\ntime.sleep(3)\nopen("late.txt", "w").write("late\\n")\n',
    );
    const run = startProcessGroup(
      process.execPath,
      [bin, 'run', code, '-o', 'gone-out', '--store', 's3://sandcell/cli'],
      {
        cwd: workspace,
        env: { ...s3.environment, SANDCELL_STORE: '' },
      },
    );
    let closed = false;
    try {
      await run.printed('ready');
      await s3.close();
      closed = true;
      const { code: exitCode } = await run.exited;
      expect(run.output.stdout).toMatch(/^\[file saved to gone-out\/late\.txt; not published: .+\]$/m);
      expect(exitCode).toBe(0);
      expect(readFileSync(path.join(workspace, 'gone-out', 'late.txt'), 'utf8')).toBe('late\n');
    } finally {
      if (closed) await s3.reopen();
    }
  });
});

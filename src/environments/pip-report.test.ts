import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ImageBuildError } from '../errors.js';
import { readReport } from './pip-report.js';

const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-pip-report-'));
afterAll(() => rm(directory, { recursive: true, force: true }));

async function report(content: unknown): Promise<string> {
  const file = path.join(directory, `${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const item = (name: string, version: string, url: string, archive?: object) => ({
  metadata: { name, version },
  download_info: { url, ...(archive ? { archive_info: archive } : {}) },
});

describe("pip's report", () => {
  it("gives the index's files with the hash the index gave, and leaves out the description's own", async () => {
    const items = await readReport(
      await report({
        version: '1',
        install: [
          item('yaspin', '3.5.1', 'https://files.example/packages/ab/yaspin-3.5.1-py3-none-any.whl', {
            hashes: { sha256: 'AA'.repeat(32) },
          }),
          item('odd', '1.0', 'https://files.example/p/odd%2B1-1.0.tar.gz', { hash: `sha256=${'b'.repeat(64)}` }),
          item('bare', '2.0', 'https://files.example/p/bare-2.0-py3-none-any.whl'),
          item('own', '1.0', 'file:///var/tmp/sandcell-environment/inputs/own-1.0-py3-none-any.whl'),
        ],
      }),
    );
    expect(items).toEqual([
      { name: 'yaspin', version: '3.5.1', filename: 'yaspin-3.5.1-py3-none-any.whl', sha256: 'aa'.repeat(32) },
      { name: 'odd', version: '1.0', filename: 'odd+1-1.0.tar.gz', sha256: 'b'.repeat(64) },
      { name: 'bare', version: '2.0', filename: 'bare-2.0-py3-none-any.whl' },
    ]);
  });

  it('refuses what is not a report of package files, saying so', async () => {
    for (const bad of [
      'not json',
      'null',
      { install: 'x' },
      { install: [null] },
      { install: [{ metadata: { name: 'x' }, download_info: { url: 'https://e/x.whl' } }] },
      { install: [item('evil', '1', 'https://e/packages/../../etc/passwd')] },
    ]) {
      await expect(readReport(await report(bad))).rejects.toThrow(ImageBuildError);
    }
    await expect(readReport(path.join(directory, 'missing.json'))).rejects.toThrow(/left no report/);
  });
});

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { loadDescription } from './description.js';
import { collectInputs } from './inputs.js';
import { formatLock, lockFilePath, parseLock, pythonLockInputs, readLock, writeLock } from './python-lock.js';
import { addToCache, cachedFile } from './wheel-cache.js';

const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-python-lock-'));
afterAll(() => rm(directory, { recursive: true, force: true }));

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const files = [
  { name: 'yaspin', version: '3.5.1', sha256: sha('yaspin'), filename: 'yaspin-3.5.1-py3-none-any.whl' },
  { name: 'termcolor', version: '3.3.0', sha256: sha('termcolor'), filename: 'termcolor-3.3.0-py3-none-any.whl' },
];

describe('the Python lock', () => {
  it('lives beside the description, .json replaced by .lock', () => {
    expect(lockFilePath('/p/sandcell.env.json')).toBe('/p/sandcell.env.lock');
    expect(lockFilePath('/p/ml.JSON')).toBe('/p/ml.lock');
    expect(lockFilePath('/p/description')).toBe('/p/description.lock');
  });

  it('is written as pip reads it, sorted by name, and read back as written', async () => {
    const description = path.join(directory, 'sandcell.env.json');
    const lock = { inputs: sha('inputs'), files };
    const file = await writeLock(description, lock);
    const text = await readFile(file, 'utf8');
    expect(text).toContain(
      `termcolor==3.3.0 --hash=sha256:${sha('termcolor')}  # termcolor-3.3.0-py3-none-any.whl\nyaspin==3.5.1`,
    );
    expect(await readLock(description)).toEqual({ inputs: lock.inputs, files: [files[1], files[0]] });
    expect(formatLock(lock, description)).toBe(text);
  });

  it('refuses a line that is not an entry, naming it, and a lock without its inputs line', () => {
    const good = formatLock({ inputs: sha('x'), files }, 'sandcell.env.json');
    for (const bad of [
      `evil==1 --hash=sha256:${sha('e')}  # ../../etc/passwd.whl`,
      `evil==1 --hash=sha256:${sha('e')} --index-url https://elsewhere.example/simple  # evil-1.whl`,
      '-e git+https://example.com/x.git#egg=x',
      `evil==1 --hash=md5:abc  # evil-1-py3-none-any.whl`,
    ]) {
      expect(() => parseLock(`${good}${bad}\n`, 'the lock')).toThrow(InvalidInputError);
      expect(() => parseLock(`${good}${bad}\n`, 'the lock')).toThrow(/line 8/);
    }
    expect(() => parseLock(good.replace(/# sandcell-lock-inputs:.*\n/, ''), 'the lock')).toThrow(
      /no `# sandcell-lock-inputs:` line/,
    );
  });

  it("is for the description's Python inputs and its Python alone: not its Debian packages, files or network", async () => {
    await writeFile(path.join(directory, 'requirements.txt'), 'yaspin>=3\n');
    await writeFile(path.join(directory, 'notes.txt'), 'one\n');
    const digest = async (description: object) => {
      const file = path.join(directory, 'digest.json');
      await writeFile(file, JSON.stringify({ name: 'x', ...description }));
      const loaded = await loadDescription(file);
      return pythonLockInputs(loaded, await collectInputs(loaded), 'python3.11');
    };
    const base = { python: { requirements: 'requirements.txt' } };
    const first = await digest(base);
    expect(
      await digest({
        ...base,
        debianPackages: ['python3-toolz'],
        network: 'none',
        files: [{ source: 'notes.txt', target: '/usr/share/x/notes.txt' }],
      }),
    ).toBe(first);
    expect(await digest({ python: { requirements: 'requirements.txt', packages: ['tabulate'] } })).not.toBe(first);
    await writeFile(path.join(directory, 'requirements.txt'), 'yaspin>=3\ntermcolor<3\n');
    expect(await digest(base)).not.toBe(first);
  });
});

describe('the wheel cache', () => {
  it('gives a file only while it has the hash it is kept under; a changed one goes', async () => {
    const cache = path.join(directory, 'cache');
    const source = path.join(directory, 'termcolor-3.3.0-py3-none-any.whl');
    await writeFile(source, 'termcolor');
    const entry = files[1] as (typeof files)[number];
    expect(await cachedFile(cache, entry)).toBeUndefined();
    await addToCache(cache, source, entry);
    const kept = await cachedFile(cache, entry);
    expect(kept).toBe(path.join(cache, 'sha256', entry.sha256, entry.filename));
    await writeFile(kept as string, 'tampered');
    expect(await cachedFile(cache, entry)).toBeUndefined();
    expect(await readFile(kept as string).catch(() => 'gone')).toBe('gone');
  });
});

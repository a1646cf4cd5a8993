/**
 * Volumes through the unmodified E2B JS SDK on real bubblewrap sandboxes, with E2B_VOLUME_API_URL the
 * same URL as E2B_API_URL: a volume created, mounted in one sandbox and written there, read by the
 * next, read and written through the content API (by its token), listed, refused to another key,
 * not destroyed while mounted, destroyed once not; the quota; traversal and symlinks on the content API.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Sandbox, Volume, VolumeError, VolumeFileType, VolumeNotFoundError, VolumePathNotFoundError } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asKey, OTHER_KEY, startE2bServer, type TestServer } from '../support/e2b.js';
import { removeStateDirectory } from '../support/volumes.js';

const MiB = 1024 * 1024;
let server: TestServer;
let stateDirectory: string;

beforeAll(async () => {
  stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-e2b-volumes-'));
  server = await startE2bServer({ stateDirectory, limits: { volumeBytes: 48 * MiB } });
  process.env.E2B_VOLUME_API_URL = process.env.E2B_API_URL;
});
afterAll(async () => {
  await server?.close();
  delete process.env.E2B_VOLUME_API_URL;
  removeStateDirectory(stateDirectory);
});

describe('E2B volumes', () => {
  it('a volume outlives its sandbox: written in one, read by the next, through the content API, listed, destroyed', async () => {
    const volume = await Volume.create('datasets');
    expect(volume.name).toBe('datasets');
    expect(volume.token).toMatch(/^svt_/);
    expect((await Volume.list()).map((listed) => listed.name)).toEqual(['datasets']);

    const first = await Sandbox.create({ volumeMounts: { '/mnt/datasets': volume } });
    try {
      expect((await first.commands.run('echo canary')).stdout).toBe('canary\n');
      await first.commands.run('mkdir -p /mnt/datasets/raw && seq 1 5 > /mnt/datasets/raw/numbers.txt');
      expect((await Sandbox.getInfo(first.sandboxId)).volumeMounts).toEqual([
        { name: 'datasets', path: '/mnt/datasets' },
      ]);
      // Mounted: not destroyed from under the sandbox, and the refusal says why.
      const refusal = await Volume.destroy(volume.volumeId).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(VolumeError);
      expect((refusal as Error).message).toMatch(/mounted by sandbox/);
    } finally {
      await first.kill();
    }

    const second = await Sandbox.create({ volumeMounts: { '/home/user/data': 'datasets' } });
    try {
      const read = await second.commands.run('cat /home/user/data/raw/numbers.txt | paste -sd+ | bc');
      expect(read.stdout).toBe('15\n');
      // The content API, as Volume.connect gives it (the volume's own token), sees the sandbox's files…
      const connected = await Volume.connect(volume.volumeId);
      expect(await connected.readFile('/raw/numbers.txt')).toBe('1\n2\n3\n4\n5\n');
      const entries = await connected.list('/', { depth: 2 });
      expect(entries.map((entry) => [entry.path, entry.type])).toEqual([
        ['/raw', VolumeFileType.DIRECTORY],
        ['/raw/numbers.txt', VolumeFileType.FILE],
      ]);
      // …and the sandbox sees what it writes, as its own user's.
      await connected.makeDir('/results/2026', { force: true });
      const written = await connected.writeFile('/results/2026/summary.csv', 'total,15\n');
      expect(written.size).toBe(9);
      expect(written.uid).toBe(1000);
      expect(
        (
          await second.commands.run(
            'cat /home/user/data/results/2026/summary.csv; stat -c %u /home/user/data/results/2026/summary.csv',
          )
        ).stdout,
      ).toBe('total,15\n1000\n');
      await second.commands.run('echo appended >> /home/user/data/results/2026/summary.csv');
      expect(await connected.readFile('/results/2026/summary.csv')).toBe('total,15\nappended\n');
      expect(await connected.exists('/results/none')).toBe(false);
      await expect(connected.readFile('/results/none.txt')).rejects.toBeInstanceOf(VolumePathNotFoundError);
      const changed = await connected.updateMetadata('/results/2026/summary.csv', { mode: 0o600 });
      expect(changed.mode & 0o777).toBe(0o600);
      await connected.remove('/results');
      expect(await connected.exists('/results')).toBe(false);
    } finally {
      await second.kill();
    }
    expect(await Volume.destroy(volume.volumeId)).toBe(true);
    expect(await Volume.list()).toEqual([]);
    await expect(Volume.getInfo(volume.volumeId)).rejects.toBeInstanceOf(VolumeNotFoundError);
  });

  it('another key’s volume is not found, by id, by token or for a mount', async () => {
    const volume = await Volume.create('private');
    try {
      await asKey(OTHER_KEY, async () => {
        await expect(Volume.getInfo(volume.volumeId)).rejects.toBeInstanceOf(VolumeNotFoundError);
        expect(await Volume.list()).toEqual([]);
        expect(await Volume.destroy(volume.volumeId)).toBe(false);
        await expect(Sandbox.create({ volumeMounts: { '/mnt/private': 'private' } })).rejects.toThrow(/No volume/);
      });
      // A token opens its own volume only, and a made-up one nothing.
      const other = await Volume.create('other');
      const forged = new Volume(other.volumeId, other.name, volume.token);
      await expect(forged.list('/')).rejects.toThrow(/Invalid volume token/);
      await Volume.destroy(other.volumeId);
    } finally {
      await Volume.destroy(volume.volumeId);
    }
  });

  it('the content API never leaves the volume: no "..", symlinks never followed, the quota held', async () => {
    const volume = await Volume.create('guarded');
    const sandbox = await Sandbox.create({ volumeMounts: { '/mnt/guarded': volume } });
    try {
      await sandbox.commands.run(
        'ln -s /etc /mnt/guarded/etc && ln -s /etc/passwd /mnt/guarded/passwd && echo ok > /mnt/guarded/ok.txt',
      );
      expect(await volume.readFile('/ok.txt')).toBe('ok\n');
      for (const attempt of ['../catalog.json', '/a/../../x', '..']) {
        await expect(volume.readFile(attempt)).rejects.toThrow(/may not hold/);
      }
      expect((await volume.getInfo('/passwd')).type).toBe(VolumeFileType.SYMLINK);
      await expect(volume.readFile('/passwd')).rejects.toThrow(/symlink/);
      await expect(volume.readFile('/etc/hostname')).rejects.toThrow();
      await expect(volume.writeFile('/etc/sandcell-was-here', 'x')).rejects.toThrow();
      await expect(volume.list('/etc')).rejects.toThrow();
      // Past the key's 48 MiB: a clear refusal, and what was there is as it was.
      const refusal = await volume
        .writeFile('/big.bin', new Blob([new Uint8Array(64 * MiB)]))
        .catch((error: unknown) => error);
      expect((refusal as Error).message).toMatch(/volumes are full/);
      expect(await volume.exists('/big.bin')).toBe(false);
      expect(await volume.readFile('/ok.txt')).toBe('ok\n');
      // The sandbox past it meets a full disk, and runs on.
      const filled = await sandbox.commands
        .run('dd if=/dev/zero of=/mnt/guarded/fill bs=1M count=64 2>&1; echo status=$?', {
          timeoutMs: 60_000,
        })
        .catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
      expect(filled.stdout).toMatch(/No space left on device/);
      await sandbox.commands.run('rm /mnt/guarded/fill');
      expect((await sandbox.commands.run('cat /mnt/guarded/ok.txt')).stdout).toBe('ok\n');
    } finally {
      await sandbox.kill();
      await Volume.destroy(volume.volumeId);
    }
  });
});

/**
 * Volumes in a backend's sandboxes: mounted read-write in two sessions at once (each writes as the
 * volume's own user, and sees the other's writes at once), read-only, a sub-path alone, the quota
 * (as root a full disk for the sandbox, a clear error for the content API, nothing else lost),
 * another owner's volume refused, a mounted volume not deleted, a fork mounting what its source
 * did, and a snapshot that records the mounts (not their files) for its resume, which says so when
 * a volume was deleted meanwhile.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { FileOperationError, InvalidPathError } from '../../src/errors.js';
import { Session } from '../../src/session/session.js';
import { openSnapshotStore } from '../../src/snapshots/local-snapshots.js';
import { VolumeInUseError, VolumeNotFoundError } from '../../src/volumes/volume-errors.js';
import { VolumeStore } from '../../src/volumes/volume-store.js';
import { removeStateDirectory } from '../support/volumes.js';

const MiB = 1024 * 1024;

async function run(session: Session, code: string): Promise<string> {
  const execution = await session.run(code);
  if (execution.error) throw new Error(`${execution.error.name}: ${execution.error.value}\n${execution.stderr}`);
  return execution.stdout.trim();
}

async function text(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

async function* bytes(...chunks: string[]): AsyncIterable<Uint8Array> {
  for (const chunk of chunks) yield Buffer.from(chunk);
}

export function runVolumesContract({ name, createBackend }: { name: string; createBackend: () => SandboxBackend }) {
  describe(`volumes in a sandbox: ${name}`, () => {
    const backend = createBackend();
    let directory: string;
    let volumes: VolumeStore;
    const open = (options: Parameters<typeof Session.create>[0] = {}) =>
      Session.create({ backend, volumes, ...options });

    beforeAll(async () => {
      directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-volumes-'));
      volumes = new VolumeStore({ directory: path.join(directory, 'volumes'), bytesPerOwner: 64 * MiB });
    });
    afterAll(async () => {
      await volumes.close();
      removeStateDirectory(directory);
    });

    it('two sessions mount one volume read-write: each writes as its user, each sees the other’s writes at once', async () => {
      const volume = await volumes.create('local', 'shared');
      const first = await open({ mounts: [{ volume: 'shared', path: '/mnt/shared' }] });
      const second = await open({ mounts: [{ volume: volume.id, path: '/home/user/shared' }] });
      try {
        expect(first.mounts).toEqual([{ volumeId: volume.id, volume: 'shared', path: '/mnt/shared', readOnly: false }]);
        // The canary: the sandbox runs, and the mount is there.
        expect(await run(first, "import os; print(os.path.isdir('/mnt/shared'))")).toBe('True');
        await run(first, "open('/mnt/shared/a.txt', 'w').write('from the first'); os.makedirs('/mnt/shared/d/e')");
        expect(await run(second, "print(open('/home/user/shared/a.txt').read())")).toBe('from the first');
        // The second's files are its own user's, and the first may change them: one owner on disk.
        await run(second, "open('/home/user/shared/b.txt', 'w').write('from the second')");
        expect(await run(first, "import os; print(os.stat('/mnt/shared/b.txt').st_uid == os.getuid())")).toBe('True');
        await run(first, "open('/mnt/shared/b.txt', 'a').write(', changed by the first')");
        expect(await run(second, "print(open('/home/user/shared/b.txt').read())")).toBe(
          'from the second, changed by the first',
        );
        // The content API reads what the sandboxes wrote, and they read what it wrote.
        const content = await volumes.content('local', volume);
        expect((await content.list('/', 2)).map((entry) => `${entry.path}:${entry.type}`)).toEqual([
          '/a.txt:file',
          '/b.txt:file',
          '/d:directory',
          '/d/e:directory',
        ]);
        await content.write('/d/e/c.txt', bytes('from the host'));
        expect(await run(first, "print(open('/mnt/shared/d/e/c.txt').read())")).toBe('from the host');
        await run(first, "open('/mnt/shared/d/e/c.txt', 'w').write('rewritten in the sandbox')");
        expect((await content.stat('/d/e/c.txt')).uid).toBe(1000);
        // A mounted volume is not deleted from under its sessions, and the refusal names them.
        const refusal = await volumes.delete('local', 'shared').catch((error: unknown) => error);
        expect(refusal).toBeInstanceOf(VolumeInUseError);
        expect((refusal as VolumeInUseError).sessions.sort()).toEqual([first.id, second.id].sort());
        // Its files are not the session's: they stay out of /mnt/data.
        expect(await run(first, "print(sorted(os.listdir('/mnt/data')))")).not.toContain('a.txt');
      } finally {
        await first.close();
        await second.close();
      }
      await volumes.delete('local', 'shared');
      expect(await volumes.list('local')).toEqual([]);
    });

    it('read-only and sub-path mounts: the rest of the volume is out of reach, and nothing is written', async () => {
      const volume = await volumes.create('local', 'library');
      const content = await volumes.content('local', volume);
      await content.write('/public/readme.txt', bytes('public'));
      await content.write('/private/secret.txt', bytes('secret'));
      const session = await open({
        mounts: [
          { volume: 'library', path: '/mnt/public', subPath: 'public', readOnly: true },
          { volume: 'library', path: '/mnt/all', readOnly: true },
        ],
      });
      try {
        expect(await run(session, "print(open('/mnt/public/readme.txt').read())")).toBe('public');
        expect(
          await run(
            session,
            "import os; print(sorted(os.listdir('/mnt/public')), os.path.exists('/mnt/public/../private'))",
          ),
        ).toBe("['readme.txt'] False");
        const refused = await run(
          session,
          "import errno\ntry:\n    open('/mnt/public/new.txt', 'w')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])\ntry:\n    open('/mnt/all/public/readme.txt', 'a')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])",
        );
        expect(refused).toBe('EROFS\nEROFS');
      } finally {
        await session.close();
      }
      const { stream, size } = await content.read('/public/readme.txt');
      expect([size, await text(stream)]).toEqual([6, 'public']);
      // A sub-path that is a symlink (planted by a sandbox, say) is refused, never followed.
      const writer = await open({ mounts: [{ volume: 'library', path: '/mnt/library' }] });
      try {
        await run(
          writer,
          "import os; os.symlink('/etc', '/mnt/library/escape'); os.symlink('/etc/passwd', '/mnt/library/passwd')",
        );
      } finally {
        await writer.close();
      }
      const through = await open({ mounts: [{ volume: 'library', path: '/mnt/escape', subPath: 'escape' }] }).catch(
        (error: unknown) => error,
      );
      expect(through).toBeInstanceOf(FileOperationError);
      // The content API reports a symlink as one, and reads nothing through it.
      expect((await content.stat('/passwd')).type).toBe('symlink');
      await expect(content.read('/passwd')).rejects.toMatchObject({ reason: 'symlink' });
      await expect(content.read('/escape/passwd')).rejects.toBeInstanceOf(FileOperationError);
      await expect(content.list('/escape')).rejects.toBeInstanceOf(FileOperationError);
    });

    it('a mount path inside the sandbox’s system, or a path out of the volume, is refused before anything starts', async () => {
      await volumes.create('local', 'checked');
      for (const target of ['/usr/lib/x', '/proc/x', '/etc', '/mnt/data/x', '/home/user', '/mnt/../etc', 'relative']) {
        await expect(open({ mounts: [{ volume: 'checked', path: target }] })).rejects.toBeInstanceOf(InvalidPathError);
      }
      await expect(open({ mounts: [{ volume: 'checked', path: '/mnt/x', subPath: '../..' }] })).rejects.toBeInstanceOf(
        InvalidPathError,
      );
      const content = await volumes.content('local', await volumes.get('local', 'checked'));
      await expect(content.read('../../catalog.json')).rejects.toBeInstanceOf(InvalidPathError);
      await expect(content.write('/a/../../b', bytes('x'))).rejects.toBeInstanceOf(InvalidPathError);
    });

    it('another owner’s volume is not found, for a mount and for its files', async () => {
      await volumes.create('owner-a', 'mine');
      await expect(open({ owner: 'owner-b', mounts: [{ volume: 'mine', path: '/mnt/mine' }] })).rejects.toBeInstanceOf(
        VolumeNotFoundError,
      );
      await expect(volumes.get('owner-b', 'mine')).rejects.toBeInstanceOf(VolumeNotFoundError);
      await expect(volumes.delete('owner-b', 'mine')).rejects.toBeInstanceOf(VolumeNotFoundError);
      expect((await volumes.list('owner-a')).map((volume) => volume.name)).toEqual(['mine']);
    });

    it('the quota: a sandbox past it meets a full disk (as root), the content API a clear error, and nothing else is lost', async () => {
      const volume = await volumes.create('quota-owner', 'big');
      const content = await volumes.content('quota-owner', volume);
      await content.write('/kept.txt', bytes('kept'));
      const session = await open({ owner: 'quota-owner', mounts: [{ volume: 'big', path: '/mnt/big' }] });
      try {
        const { bounded, usedBytes: before } = await volumes.usage('quota-owner');
        // What the files hold, not the filesystem's own: a 3 MiB file counts as about 3 MiB.
        await run(session, "open('/mnt/big/three', 'wb').write(b'3' * (3 << 20))");
        const grown = (await volumes.usage('quota-owner')).usedBytes - before;
        expect(grown).toBeGreaterThanOrEqual(3 * MiB);
        expect(grown).toBeLessThan(3.5 * MiB);
        await run(session, "import os; os.remove('/mnt/big/three')");
        if (bounded) {
          const outcome = await run(
            session,
            "import errno\ntry:\n    with open('/mnt/big/fill', 'wb') as f:\n        for _ in range(96):\n            f.write(b'x' * (1 << 20))\n            f.flush()\nexcept OSError as e:\n    print(errno.errorcode[e.errno])",
          );
          expect(outcome).toBe('ENOSPC');
          // The volume's files are disk, not the sandbox's memory: the session lives on.
          expect(await run(session, "print(open('/mnt/big/kept.txt').read())")).toBe('kept');
          await run(session, "import os; os.remove('/mnt/big/fill')");
        }
        const big = Buffer.alloc(8 * MiB, 1);
        const refusal = await content
          .write(
            '/too-big.bin',
            (async function* () {
              for (let index = 0; index < 12; index++) yield big;
            })(),
          )
          .catch((error: unknown) => error);
        expect(refusal).toMatchObject({ reason: 'no-space' });
        expect((refusal as Error).message).toMatch(/volumes are full/);
        await expect(content.stat('/too-big.bin')).rejects.toMatchObject({ reason: 'not-found' });
        expect((await content.list('/')).map((entry) => entry.name)).toEqual(['kept.txt']);
      } finally {
        await session.close();
      }
    });

    it('a fork mounts its source’s volumes; a snapshot records the mounts, not the files, and its resume says what is gone', async () => {
      const store = await openSnapshotStore(path.join(directory, 'state'));
      await volumes.create('local', 'kept');
      await volumes.create('local', 'deleted');
      const session = await open({
        snapshots: store,
        mounts: [
          { volume: 'kept', path: '/mnt/kept' },
          { volume: 'deleted', path: '/mnt/deleted', readOnly: true },
        ],
      });
      let snapshotId: string;
      try {
        await run(session, "open('/mnt/kept/large.bin', 'wb').write(b'v' * (8 << 20)); x = 42");
        const fork = await session.fork();
        try {
          expect(fork.mounts.map((mount) => mount.path)).toEqual(['/mnt/kept', '/mnt/deleted']);
          expect(await run(fork, "print(x, len(open('/mnt/kept/large.bin', 'rb').read()))")).toBe(`42 ${8 * MiB}`);
        } finally {
          await fork.close();
        }
        const snapshot = await session.snapshot();
        snapshotId = snapshot.id;
        expect(snapshot.mounts.map((mount) => mount.volume)).toEqual(['kept', 'deleted']);
        // The volume's 8 MiB are not in it.
        expect(snapshot.bytes).toBeLessThan(4 * MiB);
      } finally {
        await session.close();
      }
      await volumes.delete('local', 'deleted');
      const resumed = await Session.resume(snapshotId, { backend, volumes, snapshots: store });
      try {
        expect(resumed.mounts.map((mount) => mount.path)).toEqual(['/mnt/kept']);
        expect(resumed.restored?.notKept).toContainEqual({
          name: 'volume deleted at /mnt/deleted',
          reason: 'the volume was deleted after the snapshot, so it is not mounted',
        });
        expect(await run(resumed, "print(x, len(open('/mnt/kept/large.bin', 'rb').read()))")).toBe(`42 ${8 * MiB}`);
      } finally {
        await resumed.close();
      }
    });
  });
}

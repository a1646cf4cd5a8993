/**
 * envd's files through the unmodified SDK (`e2b` 2.51 and 2.49) on a real
 * bubblewrap sandbox: /home/user is the session's files, so what the SDK
 * writes, commands read, and what commands write, the SDK reads.
 */
import { type FilesystemEvent, FilesystemEventType, InvalidArgumentError, NotFoundError, Sandbox } from 'e2b';
import { Sandbox as Sandbox249 } from 'e2b-2-49';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;
let sandbox: Sandbox;

beforeAll(async () => {
  server = await startE2bServer();
  sandbox = await Sandbox.create();
});
afterAll(async () => {
  await sandbox?.kill().catch(() => undefined);
  await server?.close();
});

describe('E2B files', () => {
  it('writes and reads text and binary files, at absolute and relative paths', async () => {
    const written = await sandbox.files.write('/home/user/notes/hello.txt', 'héllo\n');
    expect(written).toMatchObject({ name: 'hello.txt', path: '/home/user/notes/hello.txt', type: 'file' });
    expect(await sandbox.files.read('/home/user/notes/hello.txt')).toBe('héllo\n');
    expect(await sandbox.files.read('notes/hello.txt')).toBe('héllo\n');

    const bytes = new Uint8Array(256).map((_, index) => index);
    await sandbox.files.write('data.bin', bytes.buffer);
    expect(await sandbox.files.read('/home/user/data.bin', { format: 'bytes' })).toEqual(bytes);
    // The same storage as sandcell's /mnt/data.
    expect(await sandbox.files.read('/mnt/data/data.bin', { format: 'bytes' })).toEqual(bytes);
  });

  it('writes several files at once, and raw gzip uploads', async () => {
    const results = await sandbox.files.write([
      { path: '/home/user/many/a.txt', data: 'A' },
      { path: '/home/user/many/b.txt', data: 'B' },
    ]);
    expect(results.map((entry) => entry.path).sort()).toEqual(['/home/user/many/a.txt', '/home/user/many/b.txt']);
    await sandbox.files.write('/home/user/many/c.txt', 'C'.repeat(10_000), { gzip: true });
    expect(await sandbox.files.read('/home/user/many/c.txt')).toBe('C'.repeat(10_000));
    const names = (await sandbox.files.list('/home/user/many')).map((entry) => entry.name).sort();
    expect(names).toEqual(['a.txt', 'b.txt', 'c.txt']);
  });

  it('lists with types and sizes, checks existence, makes directories, renames and removes', async () => {
    expect(await sandbox.files.makeDir('/home/user/project/src')).toBe(true);
    expect(await sandbox.files.makeDir('/home/user/project/src')).toBe(false);
    await sandbox.files.write('/home/user/project/src/main.py', 'print(1)\n');
    const listing = await sandbox.files.list('/home/user/project', { depth: 2 });
    expect(listing.map((entry) => [entry.path, entry.type])).toEqual(
      expect.arrayContaining([
        ['/home/user/project/src', 'dir'],
        ['/home/user/project/src/main.py', 'file'],
      ]),
    );
    expect(listing.find((entry) => entry.name === 'main.py')?.size).toBe(9);
    expect(await sandbox.files.exists('/home/user/project/src/main.py')).toBe(true);
    expect(await sandbox.files.exists('/home/user/project/missing.py')).toBe(false);

    const moved = await sandbox.files.rename('/home/user/project/src/main.py', '/home/user/project/app.py');
    expect(moved).toMatchObject({ name: 'app.py', path: '/home/user/project/app.py', type: 'file' });
    expect(await sandbox.files.exists('/home/user/project/src/main.py')).toBe(false);
    await sandbox.files.remove('/home/user/project');
    expect(await sandbox.files.exists('/home/user/project/app.py')).toBe(false);
  });

  it('a file a command wrote is readable, and a file the SDK wrote is a command’s', async () => {
    await sandbox.commands.run('mkdir -p out && echo "from bash" > out/report.txt');
    expect(await sandbox.files.read('/home/user/out/report.txt')).toBe('from bash\n');
    await sandbox.files.write('/home/user/input.csv', 'a,b\n1,2\n');
    const result = await sandbox.commands.run('wc -l < /home/user/input.csv && pwd');
    expect(result.stdout).toBe('2\n/home/user\n');
  });

  it('reaches /workspace (the same files) and the scratch /tmp, where E2B code writes what it runs', async () => {
    await sandbox.files.write('/workspace/agent.txt', 'from the workspace');
    expect(await sandbox.files.read('/home/user/agent.txt')).toBe('from the workspace');
    expect(await sandbox.files.exists('/workspace/agent.txt')).toBe(true);
    for (const root of ['/workspace', '/home/user', '/tmp']) expect(await sandbox.files.makeDir(root)).toBe(false);

    await sandbox.files.write('/tmp/job/run.py', 'import sys; print(sys.argv[1] * 2)\n');
    const ran = await sandbox.commands.run('python3 /tmp/job/run.py ab');
    expect(ran.stdout).toBe('abab\n');
    await sandbox.commands.run('echo made here > /tmp/job/out.txt');
    expect(await sandbox.files.read('/tmp/job/out.txt')).toBe('made here\n');
    const listed = await sandbox.files.list('/tmp/job');
    expect(listed.map((entry) => [entry.path, entry.type]).sort()).toEqual([
      ['/tmp/job/out.txt', 'file'],
      ['/tmp/job/run.py', 'file'],
    ]);
    expect(await sandbox.files.makeDir('/tmp/job/sub')).toBe(true);
    expect((await sandbox.files.getInfo('/tmp/job/sub')).type).toBe('dir');
    // Not the session's files: nothing of /tmp shows under /home/user.
    expect(await sandbox.files.exists('/home/user/job')).toBe(false);
    await sandbox.files.remove('/tmp/job');
    expect(await sandbox.files.exists('/tmp/job/run.py')).toBe(false);
    await expect(sandbox.files.read('/tmp/../etc/passwd')).rejects.toBeInstanceOf(InvalidArgumentError);
    await sandbox.commands.run('ln -s /etc /tmp/etc-link');
    await expect(sandbox.files.read('/tmp/etc-link/passwd')).rejects.toThrow(/symbolic link/);
  });

  it('answers with the SDK’s typed errors: missing files, escapes', async () => {
    await expect(sandbox.files.read('/home/user/nope.txt')).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.files.list('/home/user/nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.files.read('/home/user/../../etc/passwd')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(sandbox.files.write('/etc/evil', 'x')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(sandbox.files.rename('/home/user/nope', '/home/user/x')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('works the same from e2b 2.49 (multipart uploads)', async () => {
    const older = await Sandbox249.connect(sandbox.sandboxId);
    await older.files.write('/home/user/from-249.txt', 'old sdk');
    expect(await sandbox.files.read('/home/user/from-249.txt')).toBe('old sdk');
    expect(await older.files.exists('/home/user/from-249.txt')).toBe(true);
  });

  it('watches a directory: files created, written and removed', async () => {
    await sandbox.files.makeDir('/home/user/watched');
    const events: FilesystemEvent[] = [];
    const handle = await sandbox.files.watchDir('/home/user/watched', (event) => void events.push(event), {
      timeoutMs: 0,
    });
    try {
      await sandbox.files.write('/home/user/watched/new.txt', 'first');
      await expect
        .poll(() => events.map((event) => `${event.type} ${event.name}`), { timeout: 20_000 })
        .toContain(`${FilesystemEventType.CREATE} new.txt`);
      await sandbox.commands.run('echo more >> watched/new.txt');
      await expect
        .poll(() => events.filter((event) => event.type === FilesystemEventType.WRITE).length, { timeout: 20_000 })
        .toBeGreaterThanOrEqual(2);
      await sandbox.files.remove('/home/user/watched/new.txt');
      await expect
        .poll(() => events.map((event) => `${event.type} ${event.name}`), { timeout: 20_000 })
        .toContain(`${FilesystemEventType.REMOVE} new.txt`);
    } finally {
      await handle.stop();
    }
  });
});

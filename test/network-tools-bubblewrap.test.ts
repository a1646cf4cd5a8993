/**
 * What a user does with internet access, end to end on real bubblewrap through the real gate:
 * `pip install` from a cell, then `import` in the same live kernel, without a restart and without
 * a file landing in the session's data; and `git clone` over HTTPS into /mnt/data. Servers on this
 * machine's 127.0.0.1 stand in for the internet (a tiny package index, a git repository served as
 * static files), reached as `host.sandcell.internal` on their ports, with a test CA the session trusts.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createGateHost } from '../src/network/gate-host.js';
import type { Session } from '../src/session/session.js';
import { withSession } from './contract/contract-support.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { type StaticGitServer, startStaticGitServer } from './support/static-git-server.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';
import { startTinyIndex, type TinyIndex } from './support/tiny-index.js';

describe('internet access for packages and repositories: bubblewrap', () => {
  const backend = createBubblewrapBackend();
  const token = randomBytes(6).toString('hex');
  const HOST = 'host.sandcell.internal';
  const gate = createGateHost();
  let certificates: TestCertificates;
  let index: TinyIndex;
  let repository: StaticGitServer;
  let files: StandInServer;

  beforeAll(async () => {
    certificates = createTestCertificates([HOST]);
    const tls = { key: certificates.serverKey, cert: certificates.serverCertificate };
    index = await startTinyIndex(tls, token);
    repository = await startStaticGitServer(tls, 'probe', `probe ${token}\n`);
    files = await startStandInServer({ label: `files-${token}`, tls });
  });
  afterAll(async () => {
    await Promise.all([index?.close(), repository?.close(), files?.close()]);
    if (certificates) rmSync(certificates.directory, { recursive: true, force: true });
  });

  const withNetwork = <T>(body: (session: Session) => Promise<T>) =>
    withSession(
      backend,
      {
        network: {
          allow: [`${HOST}:${index.port}`, `${HOST}:${repository.port}`, `${HOST}:${files.port}`],
          trustedCertificates: certificates.caCertificate,
        },
        networkGate: gate,
      },
      body,
    );
  const indexUrl = () => `https://${HOST}:${index.port}/simple`;
  const dataFiles = async (session: Session) => (await session.commands.run('ls -A /mnt/data')).stdout;

  it('`!pip install` in a cell, then `import` in the next cell of the same kernel; nothing lands in /mnt/data', async () => {
    await withNetwork(async (session) => {
      const missing = await session.run('import sandcell_probe');
      expect(missing.error?.name).toBe('ModuleNotFoundError');
      const pip = await session.run(
        `!pip install --disable-pip-version-check --index-url ${indexUrl()} sandcell-probe`,
        {
          timeoutMs: 120_000,
        },
      );
      expect(pip.error).toBeUndefined();
      expect(pip.stdout).toContain('Successfully installed sandcell-probe-1.0');
      const imported = await session.run('import sandcell_probe\nprint(sandcell_probe.VALUE, sandcell_probe.__file__)');
      expect(imported.error).toBeUndefined();
      expect(imported.stdout).toMatch(new RegExp(`^${token} /tmp/\\.local/lib/python3\\.\\d+/site-packages/`));
      expect(index.requested).toContain('/simple/sandcell-probe/');
      expect(await dataFiles(session)).toBe('');
      expect(await session.files.list('', { recursive: true })).toEqual([]);
    });
  });

  it("`%pip install` (IPython's magic) then `import` works the same", async () => {
    await withNetwork(async (session) => {
      const pip = await session.run(
        `%pip install -q --disable-pip-version-check --index-url ${indexUrl()} sandcell-probe`,
        {
          timeoutMs: 120_000,
        },
      );
      expect(pip.error).toBeUndefined();
      const imported = await session.run('import sandcell_probe\nprint(sandcell_probe.VALUE)');
      expect(imported.stdout).toBe(`${token}\n`);
      expect(await dataFiles(session)).toBe('');
    });
  });

  it('a command with HOME=/home/user (as E2B runs them) installs outside the session files too, and the kernel imports it', async () => {
    await withNetwork(async (session) => {
      const pip = await session.commands.run(
        `python3 -m pip install --disable-pip-version-check --index-url ${indexUrl()} sandcell-probe`,
        { env: { HOME: '/home/user' }, cwd: '/home/user', timeoutMs: 120_000 },
      );
      expect(pip.exitCode, pip.stderr).toBe(0);
      const imported = await session.run('import sandcell_probe\nprint(sandcell_probe.VALUE)');
      expect(imported.stdout).toBe(`${token}\n`);
      const fromCommand = await session.commands.run('python3 -c "import sandcell_probe; print(sandcell_probe.VALUE)"');
      expect(fromCommand.stdout).toBe(`${token}\n`);
      expect(await dataFiles(session)).toBe('');
    });
  });

  it('git clones a repository over HTTPS into /mnt/data', async () => {
    await withNetwork(async (session) => {
      const clone = await session.commands.run(
        `git clone -q https://${HOST}:${repository.port}/${repository.repositoryPath} /mnt/data/probe && git -C /mnt/data/probe log --format=%s`,
        { timeoutMs: 120_000 },
      );
      expect(clone.exitCode, clone.stderr).toBe(0);
      expect(clone.stdout).toBe('first\n');
      expect((await session.files.read('probe/README.md')).toString()).toBe(`probe ${token}\n`);
      expect(repository.requested).toContain('/probe.git/info/refs');
    });
  });

  it('large transfers both ways, several at once, pass through the forwarder intact', async () => {
    await withNetwork(async (session) => {
      const url = `https://${HOST}:${files.port}`;
      const transfers = await session.commands.run(
        [
          'set -e',
          'head -c 8388608 /dev/zero | tr "\\0" b > /tmp/upload',
          `curl -sS --max-time 120 -o /dev/null -w '%{size_upload}\\n' --data-binary @/tmp/upload ${url}/upload`,
          `for i in 1 2 3 4 5 6; do curl -sS --max-time 120 ${url}/bytes/4194304 -o /tmp/download-$i & done; wait`,
          `curl -sS --max-time 120 ${url}/bytes/33554432 | tr -d a | wc -c`,
          'for i in 1 2 3 4 5 6; do tr -d a < /tmp/download-$i | wc -c; wc -c < /tmp/download-$i; done | sort | uniq -c',
        ].join('\n'),
        { timeoutMs: 300_000 },
      );
      expect(transfers.exitCode, transfers.stderr).toBe(0);
      // The upload's size as curl sent it; a 32 MiB answer with nothing but its bytes; six answers of 4 MiB each.
      expect(transfers.stdout.split('\n').map((line) => line.trim())).toEqual(['8388608', '0', '6 0', '6 4194304', '']);
      const upload = files.received.find((request) => request.url === '/upload');
      expect(upload?.body).toBe('b'.repeat(8_388_608));
    });
  });
});

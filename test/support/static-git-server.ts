/**
 * A git repository served over HTTPS as static files (git's "dumb" HTTP protocol): a bare repository
 * made here with one commit, `git update-server-info` run on it, and every GET answered from its
 * directory. Enough for `git clone https://…` without a git server on the host.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface StaticGitServer {
  port: number;
  /** The repository's path on the server: clone `https://HOST:PORT/<repositoryPath>`. */
  repositoryPath: string;
  /** Paths asked for, in order. */
  requested: string[];
  close(): Promise<void>;
}

/** A repository holding README.md with `content`, served at /<name>.git. */
export async function startStaticGitServer(
  tls: { key: string; cert: string },
  name: string,
  content: string,
): Promise<StaticGitServer> {
  const directory = mkdtempSync(path.join(tmpdir(), 'sandcell-git-'));
  const work = path.join(directory, 'work');
  const bare = path.join(directory, 'served', `${name}.git`);
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=sandcell test', '-c', 'user.email=test@sandcell.invalid', ...args], {
      cwd,
      stdio: 'pipe',
    });
  execFileSync('git', ['init', '-q', '-b', 'main', work]);
  writeFileSync(path.join(work, 'README.md'), content);
  git(work, 'add', 'README.md');
  git(work, 'commit', '-q', '-m', 'first');
  execFileSync('git', ['clone', '-q', '--bare', work, bare]);
  git(bare, 'update-server-info');
  const root = path.join(directory, 'served');
  const requested: string[] = [];
  const server = https.createServer(tls, (request, response) => {
    const url = new URL(request.url ?? '/', 'https://stand-in');
    requested.push(url.pathname);
    const file = path.join(root, path.normalize(decodeURIComponent(url.pathname)));
    if (request.method !== 'GET' || !file.startsWith(`${root}${path.sep}`) || !isFile(file)) {
      response.statusCode = 404;
      response.end('not found');
      return;
    }
    response.setHeader('content-type', 'application/octet-stream');
    response.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    repositoryPath: `${name}.git`,
    requested,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(directory, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The certificates a sandbox with network trusts: the system's, plus the session's own. */
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Debian's bundle of the system's CAs (package ca-certificates), under a root filesystem. */
export function systemBundlePath(systemRoot: string): string {
  return path.join(systemRoot, 'etc/ssl/certs/ca-certificates.crt');
}

/** The bundle's text: the system's CAs (none when the root has no bundle) followed by `trusted`. */
export async function certificateBundle(systemRoot: string, trusted: string | undefined): Promise<string> {
  const system = await readFile(systemBundlePath(systemRoot), 'utf8').catch(() => '');
  const parts = [system, trusted ?? ''].filter((part) => part.length > 0);
  return parts.map((part) => (part.endsWith('\n') ? part : `${part}\n`)).join('');
}

/**
 * The bundle as a host file a container can bind: named by its content, so every session that trusts
 * the same certificates shares one file and none needs removing when a sandbox ends (they are public
 * certificates, a few hundred KiB each). `directory` must be this user's own (the Docker backend
 * passes its cache directory): the engine binds whatever is at that path into the sandbox, so a
 * name in a directory another local user could write (a shared one in /tmp, as before) would let
 * them put a link to any host file there. A regular file found under the name is reused; anything
 * else is replaced.
 */
export async function writeCertificateBundle(trusted: string | undefined, directory: string): Promise<string> {
  const bundle = await certificateBundle('/', trusted);
  await mkdir(directory, { recursive: true, mode: 0o755 });
  const file = path.join(directory, `${createHash('sha256').update(bundle).digest('hex')}.pem`);
  if ((await lstat(file).catch(() => undefined))?.isFile()) return file;
  const partial = `${file}.${process.pid}.${Date.now()}`;
  await writeFile(partial, bundle, { mode: 0o644, flag: 'wx' });
  await rename(partial, file);
  return file;
}

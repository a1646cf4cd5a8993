/**
 * A preloaded library that makes `statx` work for coreutils under Debian's
 * runsc (release 2022-12-19): that Sentry refuses statx's AT_NO_AUTOMOUNT flag
 * with EINVAL, which coreutils' `ls -l` and `stat` always pass, so both fail
 * with "Invalid argument". A sandbox has no automount points, so the flag
 * changes nothing there; the shim clears it and makes the system call itself.
 * It is compiled on the host once per boot (the host's C compiler, into the
 * runtime directory's kernel files) and preloaded with LD_PRELOAD; without a
 * compiler there is no shim, and doctor says what fails.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { which } from '../bubblewrap/host-setup.js';
import { KERNEL_MOUNT } from '../sandbox-environment.js';

const execFileAsync = promisify(execFile);

const SOURCE = `#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *pathname, int flags, unsigned int mask, struct statx *buffer) {
  return (int) syscall(SYS_statx, dirfd, pathname, flags & ~AT_NO_AUTOMOUNT, mask, buffer);
}
`;

const NAME = `sandcell_gvisor_statx_${createHash('sha256').update(SOURCE).digest('hex').slice(0, 12)}.so`;

export interface StatxShim {
  /** The environment variable that preloads it in the sandbox. */
  environment: Record<string, string>;
}

/** Builds the shim into `kernelDirectory` (bound in at KERNEL_MOUNT) when missing; undefined without a C compiler. */
export async function prepareStatxShim(kernelDirectory: string): Promise<StatxShim | undefined> {
  const library = path.join(kernelDirectory, NAME);
  const present = await access(library).then(
    () => true,
    () => false,
  );
  if (!present) {
    const compiler = which('cc') ?? which('gcc');
    if (!compiler) return undefined;
    const source = `${library}.${process.pid}.c`;
    const built = `${library}.${process.pid}.tmp`;
    await writeFile(source, SOURCE);
    try {
      await execFileAsync(compiler, ['-shared', '-fPIC', '-O2', '-o', built, source], { timeout: 60_000 });
      await rename(built, library);
    } catch {
      return undefined;
    } finally {
      await Promise.all([rm(source, { force: true }), rm(built, { force: true })]);
    }
  }
  return { environment: { LD_PRELOAD: `${KERNEL_MOUNT}/${NAME}` } };
}

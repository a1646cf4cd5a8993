/**
 * What the bubblewrap backend finds and prepares on the host once per
 * process, before its first sandbox: bwrap itself and a trial run of it as a
 * sandbox's uid (user namespaces allowed), the uid leases as root, the
 * system root (the host's or a runtime root filesystem), the runtime
 * directory and seccomp filter (host-setup.ts), the cgroups; and what
 * earlier processes left behind, swept. `doctor` prints the report.
 */
import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { BackendUnavailableError } from '../../errors.js';
import { runtimeRootfsDirectory } from '../../image/recipe.js';
import { checkUidRangeIsFree, resolveUidRange, UidLeases } from '../uid-leases.js';
import { type CgroupLayout, detectCgroups, sweepStaleCgroups } from './cgroup.js';
import {
  defaultCacheDirectory,
  defaultRuntimeDirectory,
  ensureSeccompFilter,
  isRoot,
  prepareRuntime,
  type RuntimeLayout,
  which,
} from './host-setup.js';
import type { BubblewrapBackendOptions } from './options.js';
import { sweepStaleVolumes } from './volume.js';
import { sweepStaleTemplateSockets } from './zygote.js';

const execFileAsync = promisify(execFile);

/** What the backend found about the host; `doctor` prints it. */
export interface BubblewrapHostReport {
  bwrapPath: string;
  /** As root: where each session's host uid comes from. Without root, sandboxes run as the caller. */
  uidLeases?: UidLeases;
  cgroups?: CgroupLayout;
  seccompFilter: string;
  runtime: RuntimeLayout;
  /** The root filesystem /usr comes from: `/` (the host) or a runtime root filesystem. */
  systemRoot: string;
}

/**
 * Checks the host can run sandboxes, and prepares what they share: the uid
 * leases (as root), the runtime directory, the seccomp filter, the cgroups;
 * what earlier processes left (cgroups, volumes, template sockets) is swept.
 */
export async function prepareHost(options: BubblewrapBackendOptions): Promise<BubblewrapHostReport> {
  const bwrapPath = which(options.bwrapPath ?? process.env.SANDCELL_BWRAP ?? 'bwrap');
  if (!bwrapPath) {
    throw new BackendUnavailableError(
      'bubblewrap is not installed. Install it with `apt-get install bubblewrap` (or run `npm run setup`).',
    );
  }
  let uidLeases: UidLeases | undefined;
  if (isRoot()) {
    const range = resolveUidRange(options.uidRange);
    await checkUidRangeIsFree(range);
    uidLeases = new UidLeases({ range });
    await uidLeases.prepare();
  }
  const systemRoot = await resolveSystemRoot(options.rootfs ?? process.env.SANDCELL_ROOTFS);
  const runtime = await prepareRuntime(options.runtimeDirectory ?? defaultRuntimeDirectory());
  const seccompFilter = await ensureSeccompFilter(options.cacheDirectory ?? defaultCacheDirectory());
  const cgroups = options.cgroups === 'off' || !isRoot() ? undefined : await detectCgroups();
  if (cgroups) await sweepStaleCgroups(cgroups);
  await sweepStaleVolumes(runtime.sessionsDirectory, uidLeases !== undefined);
  await sweepStaleTemplateSockets(runtime.root);
  await checkUserNamespaces(bwrapPath, uidLeases);
  return { bwrapPath, uidLeases, cgroups, seccompFilter, runtime, systemRoot };
}

/** A trial bwrap, as the uid a sandbox would have. */
async function checkUserNamespaces(bwrapPath: string, uidLeases: UidLeases | undefined): Promise<void> {
  const trialUid = await uidLeases?.acquire('bubblewrap trial run');
  try {
    await execFileAsync(
      bwrapPath,
      [
        '--unshare-user',
        '--ro-bind',
        '/usr',
        '/usr',
        '--symlink',
        'usr/lib',
        '/lib',
        '--symlink',
        'usr/lib64',
        '/lib64',
        '--',
        '/usr/bin/true',
      ],
      {
        timeout: 10_000,
        cwd: '/',
        ...(trialUid ? { uid: trialUid.uid, gid: trialUid.gid } : {}),
      },
    );
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim() || String(error);
    if (!/namespace|permission|not permitted/i.test(detail)) {
      throw new BackendUnavailableError(`bubblewrap failed a trial run: ${detail}. Run \`sandcell doctor\`.`, {
        cause: error,
      });
    }
    throw new BackendUnavailableError(
      `bubblewrap cannot create a user namespace here (${detail}). Enable unprivileged user namespaces: ` +
        '`sysctl -w kernel.unprivileged_userns_clone=1` (Debian) or `sysctl -w user.max_user_namespaces=15000`, ' +
        'and on Ubuntu 24.04+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`.',
      { cause: error },
    );
  } finally {
    await trialUid?.release();
  }
}

/** Checks a runtime root filesystem option and returns its directory (`/` for the host). */
export async function resolveSystemRoot(option: string | undefined): Promise<string> {
  if (!option || option === '/' || option === 'host') return '/';
  const directory = option === 'runtime' ? runtimeRootfsDirectory() : path.resolve(option);
  const python = path.join(directory, 'usr', 'bin', 'python3');
  if (
    !(await access(python).then(
      () => true,
      () => false,
    ))
  ) {
    throw new BackendUnavailableError(
      option === 'runtime'
        ? `The runtime root filesystem for this version of sandcell is not built (${directory}). Build it with \`sandcell image build --backend bubblewrap\`.`
        : `${directory} is not a root filesystem with Python (${python} is missing). Build one with \`sandcell image build --backend bubblewrap\`.`,
    );
  }
  return directory;
}

/**
 * What the gVisor backend finds and prepares on the host once per process:
 * runsc (as root: runsc's gofer serves the sandbox's files and runs as root),
 * the uid leases, the system root, the runtime directory (shared with
 * bubblewrap: synthetic /etc files, kernel files, sessions' volumes), the
 * cgroups, the platform (platform.ts), and leftovers swept. `doctor` prints the report.
 */
import { access, copyFile, mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { BackendUnavailableError } from '../../errors.js';
import { HOST_ETC_FILES } from '../bubblewrap/arguments.js';
import { type CgroupLayout, detectCgroups, sweepStaleCgroups } from '../bubblewrap/cgroup.js';
import { resolveSystemRoot } from '../bubblewrap/host-preparation.js';
import {
  defaultCacheDirectory,
  defaultRuntimeDirectory,
  ensureSeccompFilter,
  isRoot,
  prepareRuntime,
  type RuntimeLayout,
  which,
} from '../bubblewrap/host-setup.js';
import { sweepStaleVolumes } from '../bubblewrap/volume.js';
import { checkUidRangeIsFree, resolveUidRange, UidLeases } from '../uid-leases.js';
import { sweepStaleBundles } from './bundle.js';
import { SECCOMP_FILTER_NAME } from './oci-spec.js';
import { type GvisorBackendOptions, platformChoice } from './options.js';
import { type PlatformSelection, selectPlatformOnce } from './platform.js';
import { type RunscHost, runscVersion } from './runsc.js';
import { prepareStatxShim, type StatxShim } from './statx-shim.js';

export interface GvisorHostReport extends RunscHost {
  version: string;
  platformReason: PlatformSelection['reason'];
  uidLeases: UidLeases;
  cgroups?: CgroupLayout;
  runtime: RuntimeLayout;
  /** sandcell's compiled seccomp filter (bubblewrap's), loaded in the sandbox before the supervisor. */
  seccompFilter: string;
  bundlesDirectory: string;
  systemRoot: string;
  /** The entries of HOST_ETC_FILES the system root has. */
  presentEtcFiles: string[];
  /** The preloaded fix for this runsc's statx (statx-shim.ts); absent without a C compiler. */
  statxShim?: StatxShim;
}

export async function prepareGvisorHost(options: GvisorBackendOptions): Promise<GvisorHostReport> {
  const runscPath = which(options.runscPath ?? process.env.SANDCELL_RUNSC ?? 'runsc');
  if (!runscPath) {
    throw new BackendUnavailableError(
      'gVisor is not installed. Install it with `apt-get install runsc` (or run `npm run setup`).',
    );
  }
  if (!isRoot()) {
    throw new BackendUnavailableError(
      'The gVisor backend needs sandcell to run as root: runsc makes each sandbox and its file server as root, and each session runs as a host uid of its own.',
    );
  }
  const choice = platformChoice(options);
  const range = resolveUidRange(options.uidRange);
  await checkUidRangeIsFree(range);
  const uidLeases = new UidLeases({ range });
  await uidLeases.prepare();
  const systemRoot = await resolveSystemRoot(options.rootfs ?? process.env.SANDCELL_ROOTFS);
  const runtime = await prepareRuntime(options.runtimeDirectory ?? defaultRuntimeDirectory());
  const stateDirectory = path.join(runtime.root, 'gvisor', 'state');
  const bundlesDirectory = path.join(runtime.root, 'gvisor', 'bundles');
  await mkdir(stateDirectory, { recursive: true, mode: 0o700 });
  await mkdir(bundlesDirectory, { recursive: true, mode: 0o711 });
  const cgroups = options.cgroups === 'off' ? undefined : await detectCgroups();
  if (cgroups) await sweepStaleCgroups(cgroups);
  await sweepStaleVolumes(runtime.sessionsDirectory, true);
  const version = await runscVersion(runscPath);
  const selection = await selectPlatformOnce(
    choice,
    { runscPath, stateDirectory, bundlesDirectory, systemRoot },
    version,
    path.join(runtime.root, 'gvisor', 'platform.json'),
  );
  await sweepStaleBundles(bundlesDirectory, { runscPath, stateDirectory, platform: selection.platform });
  const presentEtcFiles: string[] = [];
  for (const name of HOST_ETC_FILES) {
    if (await exists(path.join(systemRoot, 'etc', name))) presentEtcFiles.push(name);
  }
  const statxShim = await prepareStatxShim(runtime.kernelDirectory);
  const seccompFilter = await ensureSeccompFilter(defaultCacheDirectory());
  // Beside the kernel files, in the one directory bound in: a bind of its own would show in mountinfo.
  const staged = path.join(runtime.kernelDirectory, `${SECCOMP_FILTER_NAME}.${process.pid}`);
  await copyFile(seccompFilter, staged);
  await rename(staged, path.join(runtime.kernelDirectory, SECCOMP_FILTER_NAME));
  return {
    ...(statxShim ? { statxShim } : {}),
    runscPath,
    stateDirectory,
    platform: selection.platform,
    platformReason: selection.reason,
    version,
    uidLeases,
    cgroups,
    runtime,
    seccompFilter,
    bundlesDirectory,
    systemRoot,
    presentEtcFiles,
  };
}

function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/**
 * The bubblewrap backend's options, each with the environment variable it
 * falls back to, and how a session's sandbox starts (`start`), read when
 * it is used.
 */
import { BackendUnavailableError } from '../../errors.js';
import type { UidRange } from '../uid-leases.js';

export interface BubblewrapBackendOptions {
  /** The bwrap executable. @default `bwrap` on PATH (env SANDCELL_BWRAP) */
  bwrapPath?: string;
  /** Python inside the sandbox. @default `/usr/bin/python3` */
  pythonPath?: string;
  /**
   * Host uids leased to sessions when sandcell runs as root, one each, as
   * `START-END` or a range; no account or subordinate id range may overlap it.
   * @default 1974206464-1974271999 (DEFAULT_UID_RANGE; env SANDCELL_UID_RANGE)
   */
  uidRange?: string | UidRange;
  /** Where volumes and runtime files live. @default `/run/sandcell` as root, else `$XDG_RUNTIME_DIR/sandcell` (env SANDCELL_RUNTIME_DIR) */
  runtimeDirectory?: string;
  /** Where the compiled seccomp filter is cached. @default `~/.cache/sandcell` (env SANDCELL_CACHE_DIR) */
  cacheDirectory?: string;
  /** Use cgroups for memory/pids/CPU when the host lets us. @default 'auto' */
  cgroups?: 'auto' | 'off';
  /**
   * Run on a runtime root filesystem instead of the host's /usr: a directory,
   * or `runtime` for the one `sandcell image build --backend bubblewrap` built
   * for this version of sandcell. @default the host (env SANDCELL_ROOTFS)
   */
  rootfs?: string;
  /**
   * How a session's sandbox starts: `fork`, from a warm template of its root
   * filesystem (as root only: each fork becomes its session's host uid), or
   * `exec`, a new bwrap and Python each time. `auto` forks where it can and
   * execs where it cannot (see fork-template.ts). @default 'auto' (env SANDCELL_START)
   */
  start?: StartMode;
}

export type StartMode = 'auto' | 'fork' | 'exec';

/** The start mode the options (or SANDCELL_START) ask for; anything else is refused, saying what fits. */
export function startMode(options: BubblewrapBackendOptions): StartMode {
  const mode = options.start ?? process.env.SANDCELL_START ?? 'auto';
  if (mode !== 'auto' && mode !== 'fork' && mode !== 'exec') {
    throw new BackendUnavailableError(`SANDCELL_START must be auto, fork or exec (got ${JSON.stringify(mode)}).`);
  }
  return mode;
}

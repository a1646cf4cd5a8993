/**
 * The gVisor backend's options, each with the environment variable it falls
 * back to. gVisor's platform is how its kernel (the Sentry) takes the
 * sandbox's system calls: `systrap` and `kvm` where the machine has them,
 * `ptrace` anywhere; `auto` picks the fastest that works here (platform.ts).
 */
import { InvalidInputError } from '../../errors.js';
import type { UidRange } from '../uid-leases.js';

export const GVISOR_PLATFORMS = ['auto', 'systrap', 'kvm', 'ptrace'] as const;
export type GvisorPlatformChoice = (typeof GVISOR_PLATFORMS)[number];
export type GvisorPlatform = Exclude<GvisorPlatformChoice, 'auto'>;

export interface GvisorBackendOptions {
  /** The runsc executable. @default `runsc` on PATH (env SANDCELL_RUNSC) */
  runscPath?: string;
  /** gVisor's platform. @default 'auto' (env SANDCELL_GVISOR_PLATFORM) */
  platform?: GvisorPlatformChoice;
  /** Python inside the sandbox. @default `/usr/bin/python3` */
  pythonPath?: string;
  /** Host uids leased to sessions, as for bubblewrap. @default env SANDCELL_UID_RANGE, else DEFAULT_UID_RANGE */
  uidRange?: string | UidRange;
  /** Where volumes, bundles and runsc's state live. @default `/run/sandcell` (env SANDCELL_RUNTIME_DIR) */
  runtimeDirectory?: string;
  /** Use cgroups for memory/pids/CPU. @default 'auto' */
  cgroups?: 'auto' | 'off';
  /**
   * The root filesystem /usr comes from: a directory, `runtime` for the one
   * `sandcell image build --backend bubblewrap` built, or the host. @default the host (env SANDCELL_ROOTFS)
   */
  rootfs?: string;
}

/** The platform the options (or SANDCELL_GVISOR_PLATFORM) ask for; anything else is refused, saying what fits. */
export function platformChoice(options: GvisorBackendOptions): GvisorPlatformChoice {
  const choice = options.platform ?? process.env.SANDCELL_GVISOR_PLATFORM ?? 'auto';
  if (!(GVISOR_PLATFORMS as readonly string[]).includes(choice)) {
    throw new InvalidInputError(
      `Unknown gVisor platform \`${choice}\` (SANDCELL_GVISOR_PLATFORM); choose one of ${GVISOR_PLATFORMS.join(', ')}.`,
    );
  }
  return choice as GvisorPlatformChoice;
}

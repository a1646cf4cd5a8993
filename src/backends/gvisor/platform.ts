/**
 * Which gVisor platform sandboxes run on, found once per process by trial:
 * a sandbox that runs `/usr/bin/true` must end within TRIAL_MS. `auto` tries
 * what this runsc has in order of speed (systrap, then kvm where /dev/kvm
 * opens, then ptrace) and keeps the first that works, with why the faster
 * ones did not: on a VM whose /dev/kvm cannot run guests, a kvm sandbox spins
 * forever rather than failing, hence the time bound.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, readFile, rename, writeFile } from 'node:fs/promises';
import { BackendUnavailableError } from '../../errors.js';
import { bootId } from '../../internal/process-alive.js';
import { SandboxBundle } from './bundle.js';
import { buildOciSpec } from './oci-spec.js';
import type { GvisorPlatform, GvisorPlatformChoice } from './options.js';
import { deleteSandbox, type RunscHost, runscFlags, runscPlatforms } from './runsc.js';

const TRIAL_MS = 15_000;
const ORDER: GvisorPlatform[] = ['systrap', 'kvm', 'ptrace'];

export interface PlatformSelection {
  platform: GvisorPlatform;
  /** Why this one: shown by doctor. */
  reason: string;
}

type TrialHost = Omit<RunscHost, 'platform'> & { bundlesDirectory: string; systemRoot: string };

/**
 * `auto`'s choice, kept for this boot in `cacheFile` per runsc (its path and version): each process would
 * otherwise pay every slower platform's trial, a kvm one that spins its full TRIAL_MS on a VM.
 */
export async function selectPlatformOnce(
  choice: GvisorPlatformChoice,
  host: TrialHost,
  version: string,
  cacheFile: string,
): Promise<PlatformSelection> {
  if (choice !== 'auto') return selectPlatform(choice, host);
  const key = { runscPath: host.runscPath, version, boot: bootId() };
  const cached = await readFile(cacheFile, 'utf8')
    .then((text) => JSON.parse(text) as { key?: unknown; selection?: PlatformSelection })
    .catch(() => undefined);
  if (cached?.selection && JSON.stringify(cached.key) === JSON.stringify(key)) return cached.selection;
  const selection = await selectPlatform(choice, host);
  const temporary = `${cacheFile}.${process.pid}`;
  await writeFile(temporary, JSON.stringify({ key, selection }));
  await rename(temporary, cacheFile);
  return selection;
}

export async function selectPlatform(choice: GvisorPlatformChoice, host: TrialHost): Promise<PlatformSelection> {
  const built = await runscPlatforms(host.runscPath);
  if (choice !== 'auto') {
    if (!built.includes(choice)) {
      throw new BackendUnavailableError(
        `This runsc has no ${choice} platform (it has ${built.join(', ')}). Choose another with SANDCELL_GVISOR_PLATFORM, or install a newer runsc.`,
      );
    }
    const problem = await trialRun({ ...host, platform: choice });
    if (problem) throw new BackendUnavailableError(`gVisor's ${choice} platform does not work here: ${problem}.`);
    return { platform: choice, reason: 'chosen by SANDCELL_GVISOR_PLATFORM or the backend options' };
  }
  const passedOver: string[] = [];
  for (const platform of ORDER) {
    if (!built.includes(platform)) {
      passedOver.push(`${platform}: not in this runsc`);
      continue;
    }
    if (platform === 'kvm' && !(await canOpen('/dev/kvm'))) {
      passedOver.push('kvm: /dev/kvm cannot be opened');
      continue;
    }
    const problem = await trialRun({ ...host, platform });
    if (!problem) {
      return { platform, reason: passedOver.length ? passedOver.join('; ') : 'the fastest this runsc has' };
    }
    passedOver.push(`${platform}: ${problem}`);
  }
  throw new BackendUnavailableError(`gVisor cannot run a sandbox here (${passedOver.join('; ')}).`);
}

function canOpen(device: string): Promise<boolean> {
  return access(device, constants.R_OK | constants.W_OK).then(
    () => true,
    () => false,
  );
}

/** A sandbox running /usr/bin/true on `host.platform`: undefined when it ended well, else what went wrong. */
async function trialRun(host: TrialHost & { platform: GvisorPlatform }): Promise<string | undefined> {
  const id = `sandcell-${process.pid}-trial-${randomUUID().slice(0, 8)}`;
  const bundle = await SandboxBundle.create(host.bundlesDirectory, id);
  try {
    await bundle.writeSpec(
      buildOciSpec({
        rootDirectory: bundle.rootDirectory,
        systemRoot: host.systemRoot,
        presentEtcFiles: ['ld.so.cache'],
        files: {},
        dataDirectory: bundle.rootDirectory,
        tmpBytes: 1 << 20,
        environment: { PATH: '/usr/bin' },
        command: ['/usr/bin/true'],
        uid: 65534,
        gid: 65534,
      }),
    );
    return await new Promise<string | undefined>((resolve) => {
      const child = spawn(host.runscPath, [...runscFlags(host), 'run', '--bundle', bundle.directory, id], {
        stdio: ['ignore', 'ignore', 'pipe'],
        detached: true,
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        if (stderr.length < 4096) stderr += chunk.toString('utf8');
      });
      const timer = setTimeout(() => {
        resolve(`a trial sandbox did not finish in ${TRIAL_MS / 1000} s`);
        try {
          process.kill(-(child.pid as number), 'SIGKILL');
        } catch {}
      }, TRIAL_MS);
      child.once('error', (error) => {
        clearTimeout(timer);
        resolve(error.message);
      });
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve(code === 0 ? undefined : `a trial sandbox failed (${lastLine(stderr) || `status ${code}`})`);
      });
    });
  } finally {
    await deleteSandbox(host, id);
    await bundle.remove();
  }
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1)?.slice(0, 300) ?? '';
}

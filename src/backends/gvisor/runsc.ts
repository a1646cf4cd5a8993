/**
 * Running `runsc` itself: its global flags for one of sandcell's sandboxes,
 * and the commands that end one (kill, delete). Every sandbox of a process
 * keeps its state under one root (`<runtime>/gvisor/state`), named
 * `sandcell-<pid>-<random>`, so leftovers of a dead sandcell are found by name.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SnapshotFailedError } from '../../snapshots/snapshot-errors.js';
import type { GvisorPlatform } from './options.js';

const execFileAsync = promisify(execFile);

export interface RunscHost {
  runscPath: string;
  /** runsc's --root: where it keeps each sandbox's state. */
  stateDirectory: string;
  platform: GvisorPlatform;
}

/**
 * The global flags: no network device at all (the gate's socket is the way
 * out), host Unix sockets only opened (the gate's and the ingress's, bound in),
 * cgroups left to sandcell (runsc starts inside the sandbox's, joined first).
 */
export function runscFlags(host: RunscHost): string[] {
  return [
    `--root=${host.stateDirectory}`,
    `--platform=${host.platform}`,
    '--network=none',
    '--host-uds=open',
    '--ignore-cgroups',
    // An operator chasing a failure gets runsc's own logs, one file per command, in this directory.
    ...(process.env.SANDCELL_GVISOR_DEBUG_LOG
      ? ['--debug', `--debug-log=${process.env.SANDCELL_GVISOR_DEBUG_LOG}/`]
      : []),
  ];
}

/**
 * SIGKILL to the sandbox's first process, which ends the sandbox (its `runsc run` then removes its state).
 * Prompt, where `delete --force` of a running sandbox waits 5 s for it to stop and then fails.
 */
export async function killSandbox(host: RunscHost, id: string): Promise<void> {
  await execFileAsync(host.runscPath, [...runscFlags(host), 'kill', id, 'KILL'], { timeout: 10_000 }).catch(
    () => undefined,
  );
}

/**
 * Saves the sandbox's processes, memory and open files into `imageDirectory` and ends it (its `runsc run`
 * exits). A sandbox of a few hundred MiB takes seconds; the bound is for one that never answers.
 */
export async function checkpointSandbox(host: RunscHost, id: string, imageDirectory: string): Promise<void> {
  try {
    await execFileAsync(host.runscPath, [...runscFlags(host), 'checkpoint', `--image-path=${imageDirectory}`, id], {
      timeout: CHECKPOINT_TIMEOUT_MS,
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new SnapshotFailedError(`runsc could not checkpoint the sandbox: ${lastLine(stderr) ?? message}`, {
      cause: error,
    });
  }
}

const CHECKPOINT_TIMEOUT_MS = 120_000;

function lastLine(text: string | undefined): string | undefined {
  return text
    ?.trim()
    .split('\n')
    .filter((line) => line.trim())
    .at(-1)
    ?.slice(0, 500);
}

/** Removes a stopped sandbox's state (one whose `runsc run` died before removing it); what is gone is no error. */
export async function deleteSandbox(host: RunscHost, id: string): Promise<void> {
  await execFileAsync(host.runscPath, [...runscFlags(host), 'delete', '--force', id], { timeout: 10_000 }).catch(
    () => undefined,
  );
}

/** runsc's version line (`runsc version 0.0~20221219.0`), for doctor. */
export async function runscVersion(runscPath: string): Promise<string> {
  const { stdout } = await execFileAsync(runscPath, ['--version'], { timeout: 10_000 });
  return stdout.split('\n')[0]?.trim() ?? 'runsc';
}

/** The platforms this runsc was built with (`runsc help platforms`). */
export async function runscPlatforms(runscPath: string): Promise<string[]> {
  const { stdout } = await execFileAsync(runscPath, ['help', 'platforms'], { timeout: 10_000 });
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^[a-z]+$/.test(line));
}

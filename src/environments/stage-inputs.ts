/**
 * The description's files, staged for a run in the build sandbox: copied under `inputs/` of a
 * staging directory that is bound at STAGING_DIRECTORY, by the names the description gives them.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { certificateBundle } from '../network/certificate-bundle.js';
import type { EnvironmentInputs } from './inputs.js';
import { CA_BUNDLE_FILE, INPUTS_DIRECTORY, STAGING_DIRECTORY } from './layer-script.js';

/** The path under `staging` of a file the build sandbox sees at `inside` (a path under STAGING_DIRECTORY). */
export function stagedPath(staging: string, inside: string): string {
  return path.join(staging, path.posix.relative(STAGING_DIRECTORY, inside));
}

/**
 * The inputs, and for a build with network the host's CA bundle (the one sessions with network
 * trust), which the layer's pip, curl and git are pointed at: an index behind a proxy this machine
 * trusts is trusted by the build too.
 */
export async function stageInputFiles(staging: string, inputs: EnvironmentInputs, network: boolean): Promise<void> {
  if (network) {
    await mkdir(staging, { recursive: true, mode: 0o755 });
    await writeFile(stagedPath(staging, CA_BUNDLE_FILE), await certificateBundle('/', undefined), { mode: 0o644 });
  }
  const directory = stagedPath(staging, INPUTS_DIRECTORY);
  await mkdir(directory, { recursive: true, mode: 0o755 });
  for (const input of inputs.directories) {
    await mkdir(path.join(directory, input.name), { recursive: true, mode: 0o755 });
  }
  for (const file of inputs.files) {
    const target = path.join(directory, file.name);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
    await copyFile(file.source, target);
  }
}

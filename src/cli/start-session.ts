/** The sandbox `run` and `exec` work in: its backend, environment, limits and network from the flags, the --upload files in /mnt/data. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createSession, type Session } from '../session/session.js';
import { type BackendCliOptions, backendFromOptions } from './backend-option.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';
import { type LimitCliOptions, limitSessionOptions } from './limit-options.js';
import { type NetworkCliOptions, networkSessionOptions } from './network-options.js';
import { dim } from './render.js';
import { startStatus } from './status.js';
import { type VolumeCliOptions, volumeSessionOptions } from './volume-options.js';

export interface StartSessionOptions extends BackendCliOptions, LimitCliOptions, NetworkCliOptions, VolumeCliOptions {
  upload: string[];
}

/**
 * Reads the uploads first (a missing file is a usage error before any sandbox starts), starts the
 * session with a status line, and writes the uploads into it. `quiet` (--json) prints nothing.
 * `uploaded` names them, so that copying the session's files out can leave them behind.
 */
export async function startSessionWithUploads(
  options: StartSessionOptions,
  { timeoutMs, quiet = false }: { timeoutMs: number | undefined; quiet?: boolean },
): Promise<{ session: Session; uploaded: Set<string> }> {
  const uploads = await Promise.all(
    options.upload.map(async (hostPath) => {
      try {
        return { name: path.basename(hostPath), content: await readFile(hostPath) };
      } catch (error) {
        throw new CliExit(EXIT_USAGE, `Cannot upload ${hostPath}: ${(error as Error).message}`);
      }
    }),
  );
  // Before the spinner: a bad size fails, and a --max-data --memory cannot hold is said, on a line of its own.
  const limits = limitSessionOptions(options);
  const mounts = volumeSessionOptions(options);
  const backend = await backendFromOptions(options, quiet);
  const status = startStatus(quiet ? undefined : process.stderr, 'starting sandbox');
  const session = await createSession({
    backend,
    ...(options.env ? { environmentName: options.env } : {}),
    ...limits,
    ...networkSessionOptions(options),
    ...mounts,
    ...(timeoutMs ? { timeoutMs } : {}),
  }).finally(() => status.stop());
  try {
    for (const upload of uploads) {
      await session.files.write(upload.name, upload.content);
      if (!quiet) process.stderr.write(dim(`uploaded ${upload.name} → /mnt/data/${upload.name}\n`, process.stderr));
    }
  } catch (error) {
    await session.close();
    throw error;
  }
  return { session, uploaded: new Set(uploads.map((upload) => upload.name)) };
}

/**
 * `--volume NAME[/SUBPATH]:/PATH[:ro]` on run, exec, repl, shell, chat and ask: the library's volumes
 * (`sandcell volume create`) mounted in the command's sandbox, checked before any sandbox starts.
 */
import type { Command } from 'commander';
import type { SessionOptions, VolumeMount } from '../session/options.js';
import { checkMountRequests } from '../volumes/volume-paths.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';

export interface VolumeCliOptions {
  volume?: string[];
}

const VOLUME_HELP =
  'mount a volume (`sandcell volume create NAME`) at an absolute path: NAME:/PATH, NAME/SUBDIR:/PATH for a directory of it, :ro at the end for read-only (repeatable)';

export function addVolumeOption(command: Command): Command {
  return command.option('-v, --volume <NAME:/PATH[:ro]>', VOLUME_HELP, (value: string, previous: string[] = []) => [
    ...previous,
    value,
  ]);
}

/** One flag's mount: `NAME[/SUBPATH]:/PATH[:ro]`. */
export function parseVolumeFlag(value: string): VolumeMount {
  const colon = value.indexOf(':');
  if (colon <= 0) throw new CliExit(EXIT_USAGE, `--volume ${value}: write it NAME:/PATH (e.g. data:/mnt/data-sets).`);
  const source = value.slice(0, colon);
  let target = value.slice(colon + 1);
  const readOnly = target.endsWith(':ro');
  if (readOnly) target = target.slice(0, -':ro'.length);
  const slash = source.indexOf('/');
  const volume = slash === -1 ? source : source.slice(0, slash);
  const subPath = slash === -1 ? undefined : source.slice(slash + 1);
  return { volume, path: target, ...(readOnly ? { readOnly } : {}), ...(subPath ? { subPath } : {}) };
}

export function volumeSessionOptions(options: VolumeCliOptions): Pick<SessionOptions, 'mounts'> {
  if (!options.volume?.length) return {};
  const mounts = options.volume.map(parseVolumeFlag);
  try {
    checkMountRequests(mounts);
  } catch (error) {
    throw new CliExit(EXIT_USAGE, `--volume: ${(error as Error).message}`);
  }
  return { mounts };
}

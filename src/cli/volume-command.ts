/**
 * `sandcell volume create|list|rm|cp`: the library's volumes in the state directory (owned by `local`,
 * as a keyless `sandcell serve` on the same state directory sees them), mounted into a command's
 * sandbox with `--volume NAME:/PATH`. `cp` copies a file or a directory tree between this machine
 * and a volume, one side written `NAME:/PATH`.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SandcellError } from '../errors.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { LOCAL_VOLUME_OWNER, localVolumeStore } from '../volumes/local-volumes.js';
import type { VolumeContent } from '../volumes/volume-content.js';
import type { VolumeStore } from '../volumes/volume-store.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

interface VolumeCommandOptions {
  json?: boolean;
}

function store(): VolumeStore {
  try {
    return localVolumeStore();
  } catch (error) {
    throw new CliExit(EXIT_USAGE, (error as Error).message);
  }
}

/** A library error (a bad name, a volume not there) is the user's to fix: a usage error with its words. */
async function said<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof SandcellError && error.code !== 'sandbox-start-failed')
      throw new CliExit(EXIT_USAGE, error.message);
    throw error;
  }
}

export async function volumeCreateCommand(name: string, options: VolumeCommandOptions): Promise<number> {
  const record = await said(() => store().create(LOCAL_VOLUME_OWNER, name));
  const shown = { id: record.id, name: record.name, createdAt: record.createdAt };
  process.stdout.write(options.json ? `${JSON.stringify(shown)}\n` : `created volume ${record.name} (${record.id})\n`);
  return EXIT_OK;
}

export async function volumeListCommand(options: VolumeCommandOptions): Promise<number> {
  const volumes = store();
  const records = await said(() => volumes.list(LOCAL_VOLUME_OWNER));
  const usage = await said(() => volumes.usage(LOCAL_VOLUME_OWNER));
  if (options.json) {
    const shown = records.map((record) => ({ id: record.id, name: record.name, createdAt: record.createdAt }));
    process.stdout.write(`${JSON.stringify({ volumes: shown, ...usage }, null, 2)}\n`);
    return EXIT_OK;
  }
  if (records.length === 0) process.stdout.write('no volumes (sandcell volume create NAME makes one)\n');
  for (const record of records) process.stdout.write(`${record.name}\t${record.id}\t${record.createdAt}\n`);
  process.stdout.write(
    `${formatBytes(usage.usedBytes)} of ${formatBytes(usage.quotaBytes)} used${usage.bounded ? '' : " (measured: run as root for a bound the sandboxes' own writes meet)"}\n`,
  );
  return EXIT_OK;
}

export async function volumeRemoveCommand(name: string, options: VolumeCommandOptions): Promise<number> {
  const record = await said(() => store().delete(LOCAL_VOLUME_OWNER, name));
  process.stdout.write(
    options.json ? `${JSON.stringify({ deleted: record.name })}\n` : `deleted volume ${record.name}\n`,
  );
  return EXIT_OK;
}

/** `NAME:/PATH` (a volume's side), or a path on this machine (anything else: a path holds no `:` before its first `/`). */
function sideOf(argument: string): { volume: string; path: string } | { host: string } {
  const match = /^([A-Za-z0-9][A-Za-z0-9_.-]{0,62}):(.*)$/.exec(argument);
  return match ? { volume: match[1] as string, path: match[2] || '/' } : { host: argument };
}

export async function volumeCopyCommand(
  source: string,
  target: string,
  options: VolumeCommandOptions,
): Promise<number> {
  const from = sideOf(source);
  const to = sideOf(target);
  if ('host' in from === 'host' in to) {
    throw new CliExit(
      EXIT_USAGE,
      'sandcell volume cp copies between this machine and a volume: write one side NAME:/PATH.',
    );
  }
  const volumes = store();
  const named = 'volume' in from ? from : (to as { volume: string; path: string });
  const record = await said(() => volumes.get(LOCAL_VOLUME_OWNER, named.volume));
  const content = await volumes.content(LOCAL_VOLUME_OWNER, record);
  const copied =
    'host' in from
      ? await said(() => copyIn(from.host, content, (to as { path: string }).path))
      : await said(() => copyOut(content, from.path, (to as { host: string }).host));
  process.stdout.write(
    options.json
      ? `${JSON.stringify({ files: copied.files, bytes: copied.bytes })}\n`
      : `copied ${copied.files} file(s), ${formatBytes(copied.bytes)}\n`,
  );
  return EXIT_OK;
}

async function copyIn(
  hostPath: string,
  content: VolumeContent,
  volumePath: string,
): Promise<{ files: number; bytes: number }> {
  const info = await stat(hostPath).catch(() => {
    throw new CliExit(EXIT_USAGE, `No file or directory ${hostPath} here.`);
  });
  if (info.isFile()) {
    // Into a directory of the volume (a path ending in "/" or one that is a directory), under the file's name.
    const existing = await content.stat(volumePath).catch(() => undefined);
    const target =
      volumePath.endsWith('/') || existing?.type === 'directory'
        ? path.posix.join(volumePath, path.basename(hostPath))
        : volumePath;
    const written = await content.write(target, createReadStream(hostPath));
    return { files: 1, bytes: written.size };
  }
  if (!info.isDirectory()) throw new CliExit(EXIT_USAGE, `${hostPath} is neither a file nor a directory.`);
  if (volumePath.replace(/\/+$/, '') !== '') await content.makeDirectory(volumePath, { parents: true });
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(hostPath, { withFileTypes: true })) {
    if (!entry.isFile() && !entry.isDirectory()) continue;
    const copied = await copyIn(path.join(hostPath, entry.name), content, path.posix.join(volumePath, entry.name));
    files += copied.files;
    bytes += copied.bytes;
  }
  return { files, bytes };
}

async function copyOut(
  content: VolumeContent,
  volumePath: string,
  hostPath: string,
): Promise<{ files: number; bytes: number }> {
  const entry = await content.stat(volumePath);
  if (entry.type === 'file') {
    const into = await stat(hostPath).catch(() => undefined);
    const target = into?.isDirectory() ? path.join(hostPath, entry.name) : hostPath;
    const { stream, size } = await content.read(volumePath);
    await pipeline(stream, createWriteStream(target));
    return { files: 1, bytes: size };
  }
  if (entry.type !== 'directory') return { files: 0, bytes: 0 };
  await mkdir(hostPath, { recursive: true });
  let files = 0;
  let bytes = 0;
  for (const child of await content.list(volumePath)) {
    if (child.type !== 'file' && child.type !== 'directory') continue;
    const copied = await copyOut(content, child.path, path.join(hostPath, child.name));
    files += copied.files;
    bytes += copied.bytes;
  }
  return { files, bytes };
}

/**
 * pip's installation report (`pip install --dry-run --report`, format 1), read after a resolution:
 * what it would install from an index, each with its name, version, file name and the hash the index
 * gave; what it would install from the description's own files is left out. Bounded, and checked
 * field by field.
 */
import { readFile, stat } from 'node:fs/promises';
import { ImageBuildError } from '../errors.js';
import { PACKAGE_FILE_NAME } from './python-lock.js';

/** Largest pip report read. */
const MAX_REPORT_BYTES = 32 * 1024 * 1024;

export interface ReportItem {
  name: string;
  version: string;
  filename: string;
  /** The hash the index gave, when it gave one. */
  sha256?: string;
}

/** pip's installation report (format 1): the files from an index it would install; the inputs' own are left out. */
export async function readReport(file: string): Promise<ReportItem[]> {
  const info = await stat(file).catch(() => undefined);
  if (!info || info.size > MAX_REPORT_BYTES) {
    throw new ImageBuildError(`pip left no report of at most ${MAX_REPORT_BYTES} bytes of what it resolved.`);
  }
  let report: { install?: unknown };
  try {
    report = JSON.parse(await readFile(file, 'utf8')) as { install?: unknown };
  } catch (error) {
    throw new ImageBuildError(`pip's report of what it resolved is not JSON: ${(error as Error).message}`);
  }
  if (typeof report !== 'object' || report === null || !Array.isArray(report.install)) {
    throw new ImageBuildError("pip's report has no list of what it would install.");
  }
  const items: ReportItem[] = [];
  for (const entry of report.install as Array<Record<string, unknown> | null>) {
    if (typeof entry !== 'object' || entry === null)
      throw new ImageBuildError("pip's report has an entry that is not an object.");
    const metadata = entry.metadata as { name?: unknown; version?: unknown } | undefined;
    const download = entry.download_info as
      | { url?: unknown; archive_info?: { hash?: unknown; hashes?: { sha256?: unknown } } }
      | undefined;
    const url = typeof download?.url === 'string' ? download.url : undefined;
    if (typeof metadata?.name !== 'string' || typeof metadata.version !== 'string' || url === undefined) {
      throw new ImageBuildError("pip's report has an entry without a name, a version and a URL.");
    }
    if (url.startsWith('file:')) continue;
    const filename = decodeURIComponent(new URL(url).pathname.split('/').at(-1) ?? '');
    if (!PACKAGE_FILE_NAME.test(filename)) {
      throw new ImageBuildError(`pip resolved ${metadata.name} to ${url}, which is not a package file.`);
    }
    const archive = download?.archive_info;
    const given =
      typeof archive?.hashes?.sha256 === 'string'
        ? archive.hashes.sha256
        : typeof archive?.hash === 'string' && archive.hash.startsWith('sha256=')
          ? archive.hash.slice('sha256='.length)
          : undefined;
    items.push({
      name: metadata.name,
      version: metadata.version,
      filename,
      ...(given ? { sha256: given.toLowerCase() } : {}),
    });
  }
  return items;
}

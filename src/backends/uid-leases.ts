/**
 * Host uids for sandboxes, one per session. Per-user kernel limits (inotify
 * instances, processes, user namespaces, …) and per-user access (/proc/PID,
 * signals) follow the host uid, so sessions that shared one account could
 * starve or reach each other. Each session leases its own uid (and the gid
 * of the same number) from a range no host account uses, for its whole life;
 * the lease is released at close and swept once its owner process is gone.
 *
 * Leases are files in one machine-wide directory (not under a runtime
 * directory a caller may change), so every sandcell process on the host
 * takes part. A lease is claimed by creating `<uid>.<token>` atomically, then
 * checking that no other live lease of that uid exists: of two processes
 * claiming one uid at once, at most one keeps it (the later check sees the
 * earlier file). A file is removed only by its owner or once its owner is
 * provably gone, so a sweep never takes a live lease.
 */
import { execFile } from 'node:child_process';
import { randomInt, randomUUID } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { BackendUnavailableError, SandboxStartError } from '../errors.js';
import { ownProcessIdentity, type ProcessIdentity, processIsGone } from '../internal/process-alive.js';

const execFileAsync = promisify(execFile);

export interface UidRange {
  /** First uid (and gid) of the range, inclusive. */
  first: number;
  /** Last uid (and gid) of the range, inclusive. */
  last: number;
}

/**
 * 0x75AC0000–0x75ACFFFF (1974206464–1974271999): 65,536 ids, in the range
 * systemd documents as unused (above its container ranges, which end at
 * 1879048191, and below its "foreign" range at 0x7FFE0000 and the upper half
 * that many tools read as negative), far from regular and system accounts,
 * systemd's dynamic users (61184–65519), nobody (65534) and the subordinate
 * ranges useradd hands out (100000 upwards, 65536 a user).
 */
export const DEFAULT_UID_RANGE: UidRange = { first: 0x75ac_0000, last: 0x75ac_ffff };

/** Where leases live when sandcell runs as root: machine-wide, root only. */
export const ROOT_UID_LEASE_DIRECTORY = '/run/sandcell-uid-leases';

/** uids the range may never include: root, nobody, and the 16- and 32-bit "no uid" values. */
const FORBIDDEN_IDS = [0, 65534, 65535, 4294967295];

/** Passes over the range before giving up, when claims keep colliding with other processes' claims. */
const ACQUIRE_PASSES = 8;

/** A lease file whose content cannot be read as an owner is left alone this long (a claim being written). */
const UNREADABLE_LEASE_GRACE_MS = 60_000;

function rangeError(message: string): BackendUnavailableError {
  return new BackendUnavailableError(
    `${message} Choose a range of host uids that no account and no subordinate id range (/etc/subuid, /etc/subgid) uses, ` +
      `with SANDCELL_UID_RANGE=START-END (or the backend's uidRange option), e.g. SANDCELL_UID_RANGE=${formatUidRange(DEFAULT_UID_RANGE)}.`,
  );
}

export function formatUidRange(range: UidRange): string {
  return `${range.first}-${range.last}`;
}

/** Reads `START-END` (decimal, inclusive). */
export function parseUidRange(text: string): UidRange {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  if (!match) throw rangeError(`SANDCELL_UID_RANGE must be START-END, two uids; got ${JSON.stringify(text)}.`);
  return checkUidRangeShape({ first: Number(match[1]), last: Number(match[2]) });
}

function checkUidRangeShape(range: UidRange): UidRange {
  const { first, last } = range;
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || first < 1 || last > 4294967294 || first > last) {
    throw rangeError(`The uid range ${formatUidRange(range)} is not a range of uids (1 … 4294967294, START ≤ END).`);
  }
  const forbidden = FORBIDDEN_IDS.find((id) => id >= first && id <= last);
  if (forbidden !== undefined) throw rangeError(`The uid range ${formatUidRange(range)} includes ${forbidden}.`);
  return range;
}

/** The range to lease from: the option, else SANDCELL_UID_RANGE, else DEFAULT_UID_RANGE. */
export function resolveUidRange(option?: string | UidRange): UidRange {
  const chosen = option ?? process.env.SANDCELL_UID_RANGE;
  if (chosen === undefined || chosen === '') return DEFAULT_UID_RANGE;
  return typeof chosen === 'string' ? parseUidRange(chosen) : checkUidRangeShape(chosen);
}

/** Where leases live: machine-wide for root; for others (Docker users), per user. */
export function defaultUidLeaseDirectory(): string {
  if (process.getuid?.() === 0) return ROOT_UID_LEASE_DIRECTORY;
  const base = process.env.XDG_RUNTIME_DIR ?? path.join(os.homedir(), '.cache');
  return path.join(base, 'sandcell-uid-leases');
}

/** Files that say which ids are taken on this host, for the range check. */
export interface HostIdSources {
  /** @default `/etc/subuid` */
  subuid?: string;
  /** @default `/etc/subgid` */
  subgid?: string;
}

/** Account entries `name:…:id:…` (passwd: uid in field 3; group: gid in field 3) from every NSS source getent can list. */
async function accountIds(database: 'passwd' | 'group'): Promise<{ name: string; id: number }[]> {
  let text: string;
  try {
    text = (await execFileAsync('getent', [database], { timeout: 30_000, maxBuffer: 256 * 1024 * 1024 })).stdout;
  } catch {
    text = await readFile(`/etc/${database}`, 'utf8').catch(() => '');
  }
  return text
    .split('\n')
    .map((line) => line.split(':'))
    .filter((fields) => fields.length >= 3 && /^\d+$/.test(fields[2] ?? ''))
    .map((fields) => ({ name: fields[0] as string, id: Number(fields[2]) }));
}

/** Ranges `name:start:count` of a subordinate id file. */
async function subordinateRanges(file: string): Promise<{ name: string; first: number; last: number }[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((line) => line.trim().split(':'))
    .filter((fields) => fields.length === 3 && /^\d+$/.test(fields[1] ?? '') && /^\d+$/.test(fields[2] ?? ''))
    .map(([name, start, count]) => ({
      name: name as string,
      first: Number(start),
      last: Number(start) + Number(count) - 1,
    }));
}

/**
 * Throws BackendUnavailableError when an account, a group or a subordinate id
 * range of this host overlaps `range`: a sandbox must never run as someone.
 */
export async function checkUidRangeIsFree(range: UidRange, sources: HostIdSources = {}): Promise<void> {
  const inRange = (id: number) => id >= range.first && id <= range.last;
  const own = process.getuid?.();
  if (own !== undefined && inRange(own)) {
    throw rangeError(`The uid range ${formatUidRange(range)} includes sandcell's own uid ${own}.`);
  }
  for (const database of ['passwd', 'group'] as const) {
    const taken = (await accountIds(database)).find((entry) => inRange(entry.id));
    if (taken) {
      throw rangeError(
        `The uid range ${formatUidRange(range)} that sandcell leases to sandboxes includes ${database === 'passwd' ? 'the account' : 'the group'} ${taken.name} (${taken.id}).`,
      );
    }
  }
  for (const file of [sources.subuid ?? '/etc/subuid', sources.subgid ?? '/etc/subgid']) {
    const overlap = (await subordinateRanges(file)).find(
      (entry) => entry.first <= range.last && entry.last >= range.first,
    );
    if (overlap) {
      throw rangeError(
        `The uid range ${formatUidRange(range)} that sandcell leases to sandboxes overlaps ${overlap.name}'s subordinate ids ${overlap.first}-${overlap.last} in ${file}.`,
      );
    }
  }
}

/** One session's host uid; `release()` gives it back (idempotent). */
export interface UidLease {
  readonly uid: number;
  readonly gid: number;
  release(): Promise<void>;
}

interface LeaseRecord extends ProcessIdentity {
  /** What the lease is for, to read in the directory: `bubblewrap session <id>`, … */
  purpose: string;
}

export interface UidLeasesOptions {
  range: UidRange;
  /** @default defaultUidLeaseDirectory() */
  directory?: string;
}

/** The leases of one range in one directory, shared with every other sandcell process using it. */
export class UidLeases {
  readonly range: UidRange;
  readonly directory: string;
  /** Names of the lease files this object holds: alive by definition, never read back. */
  private readonly ours = new Set<string>();
  /**
   * Owners of other lease files, by name. A lease file is written whole before
   * it gets its name and never changes, so it is read once; only whether its
   * owner still lives is checked again. Otherwise every claim would read every
   * lease on the machine, and a burst of new sessions would cost their square.
   */
  private readonly owners = new Map<string, ProcessIdentity>();

  constructor(options: UidLeasesOptions) {
    this.range = checkUidRangeShape(options.range);
    this.directory = options.directory ?? defaultUidLeaseDirectory();
  }

  /** Creates the directory (owner only) and sweeps the leases of processes that are gone. */
  async prepare(): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const info = await lstat(this.directory);
    const own = process.getuid?.();
    if (!info.isDirectory() || (own !== undefined && info.uid !== own) || (info.mode & 0o077) !== 0) {
      throw new BackendUnavailableError(
        `The uid lease directory ${this.directory} must be a directory that only sandcell's account can use (mode 0700, owned by uid ${own}); fix or remove it.`,
      );
    }
    await this.sweep();
  }

  /** Removes every lease (and half-written claim) whose owner is gone; returns how many. */
  async sweep(): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.directory)) {
      if ((await this.ownerState(name)) === 'gone') {
        await rm(path.join(this.directory, name), { force: true });
        removed += 1;
      }
    }
    return removed;
  }

  /** Leases a uid no live lease holds, starting at a random place in the range (fewer collisions). */
  async acquire(purpose: string): Promise<UidLease> {
    const size = this.range.last - this.range.first + 1;
    for (let pass = 0; pass < ACQUIRE_PASSES; pass += 1) {
      const held = await this.heldUids();
      if (held.size >= size) break;
      const start = randomInt(size);
      for (let step = 0; step < size; step += 1) {
        const uid = this.range.first + ((start + step) % size);
        if (held.has(uid)) continue;
        const lease = await this.claim(uid, purpose);
        if (lease) return lease;
      }
      // Every free uid was contended (two claims back off from each other): try again a moment later.
      await new Promise((resolve) => setTimeout(resolve, randomInt(1, 25)));
    }
    throw new SandboxStartError(
      `Every host uid of ${formatUidRange(this.range)} is leased to a live session. Close sessions, or give sandcell a wider range with SANDCELL_UID_RANGE=START-END.`,
    );
  }

  /** uids with a lease whose owner is not known to be gone. */
  private async heldUids(): Promise<Set<number>> {
    const names = await readdir(this.directory);
    const present = new Set(names);
    for (const name of this.owners.keys()) if (!present.has(name)) this.owners.delete(name);
    const held = new Set<number>();
    const gone = new Map<string, boolean>();
    for (const name of names) {
      const uid = leaseUid(name);
      if (uid === undefined) continue;
      if (this.ours.has(name) || (await this.ownerState(name, gone)) !== 'gone') held.add(uid);
    }
    return held;
  }

  /** Writes our claim on `uid`, then keeps it only if no other live claim of `uid` exists. */
  private async claim(uid: number, purpose: string): Promise<UidLease | undefined> {
    const token = randomUUID().replaceAll('-', '').slice(0, 16);
    const name = `${uid}.${token}`;
    const file = path.join(this.directory, name);
    const record: LeaseRecord = { ...ownProcessIdentity(), purpose };
    // Written whole under a name no lease reader takes for a lease, then renamed into place.
    const partial = path.join(this.directory, `.claim-${token}`);
    await writeFile(partial, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(partial, file);
    for (const other of await readdir(this.directory)) {
      if (other === name || leaseUid(other) !== uid) continue;
      if ((await this.ownerState(other)) === 'gone') {
        await rm(path.join(this.directory, other), { force: true });
        continue;
      }
      await unlink(file).catch(() => undefined);
      return undefined;
    }
    this.ours.add(name);
    let released: Promise<void> | undefined;
    return {
      uid,
      gid: uid,
      release: () => {
        released ??= unlink(file)
          .catch((error: NodeJS.ErrnoException) => {
            if (error.code !== 'ENOENT') throw error;
          })
          .then(() => {
            this.ours.delete(name);
          });
        return released;
      },
    };
  }

  /**
   * Whether the owner of a file in the directory is `gone`, `alive`, or cannot
   * be told yet (`unknown`, kept). `gone` memoises the answer per owner within
   * one pass over the directory.
   */
  private async ownerState(name: string, gone = new Map<string, boolean>()): Promise<'gone' | 'alive' | 'unknown'> {
    const file = path.join(this.directory, name);
    let owner = this.owners.get(name);
    if (!owner) {
      let record: Partial<LeaseRecord> | undefined;
      try {
        record = JSON.parse(await readFile(file, 'utf8')) as Partial<LeaseRecord>;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
        record = undefined;
      }
      if (
        record &&
        typeof record.pid === 'number' &&
        typeof record.start === 'string' &&
        typeof record.boot === 'string'
      ) {
        owner = { pid: record.pid, start: record.start, boot: record.boot };
        if (leaseUid(name) !== undefined) this.owners.set(name, owner);
      }
    }
    if (owner) {
      const key = `${owner.pid} ${owner.start} ${owner.boot}`;
      let ownerGone = gone.get(key);
      if (ownerGone === undefined) {
        ownerGone = processIsGone(owner);
        gone.set(key, ownerGone);
      }
      return ownerGone ? 'gone' : 'alive';
    }
    // Not a lease we can read: a crashed writer's leftover once it is old enough.
    const modified = await stat(file).then(
      (info) => info.mtimeMs,
      () => 0,
    );
    return Date.now() - modified > UNREADABLE_LEASE_GRACE_MS ? 'gone' : 'unknown';
  }
}

/** The uid a lease file is for (`<uid>.<token>`), or undefined for anything else. */
function leaseUid(name: string): number | undefined {
  const match = /^(\d+)\.[0-9a-f]+$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

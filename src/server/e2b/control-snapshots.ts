/**
 * E2B's snapshots as the key's sandcell snapshots: `createSnapshot` takes one
 * of a running sandbox (which runs on: sandcell does not need to pause it),
 * `listSnapshots` pages them (`sandboxID` filters by the sandbox they were
 * taken of), `deleteSnapshot` (`DELETE /templates/{id}`) deletes one, and a
 * create whose `templateID` is a snapshot's id starts a sandbox from it. The
 * snapshots that hold paused sandboxes are the registry's, not the key's:
 * they are neither listed nor deletable here.
 */
import type { SnapshotInfo } from '../../session/session-state.js';
import type { Owner } from '../core/auth.js';
import type { SessionRegistry } from '../core/registry.js';
import { MAX_PAGE_SIZE } from './control-schemas.js';
import { E2bError } from './errors.js';

/** sandcell's snapshot ids, and E2B's way of naming a snapshot's default tag (`<id>:default`). */
const SNAPSHOT_ID = /^([0-9a-f]{32})(?::default)?$/;

/** The snapshot id a `templateID` or `snapshotID` names, if it has the form of one. */
export function snapshotIdOf(name: string): string | undefined {
  return SNAPSHOT_ID.exec(name)?.[1];
}

/** A snapshot's name (E2B's `createSnapshot({ name })`): lower case, as E2B's template names; `name:default` is its tag. */
const SNAPSHOT_NAME = /^([a-z0-9][a-z0-9._-]{0,62})(?::default)?$/;

export function snapshotNameOf(name: string): string | undefined {
  const match = SNAPSHOT_NAME.exec(name);
  return match && snapshotIdOf(name) === undefined ? match[1] : undefined;
}

/** Newest first, then by id. */
const newestFirst = (first: SnapshotInfo, second: SnapshotInfo): number =>
  first.createdAt === second.createdAt
    ? first.id.localeCompare(second.id)
    : second.createdAt.localeCompare(first.createdAt);

/** The key's newest snapshot under `name`: the one the name stands for (a later snapshot takes it over). */
function newestNamed(snapshots: SnapshotInfo[], name: string): SnapshotInfo | undefined {
  return snapshots.filter((snapshot) => snapshot.name === name).sort(newestFirst)[0];
}

/** The names a snapshot answers to: its name, if it is the newest under it. */
function namesOf(snapshot: SnapshotInfo, snapshots: SnapshotInfo[]): string[] {
  return snapshot.name !== undefined && newestNamed(snapshots, snapshot.name)?.id === snapshot.id
    ? [snapshot.name]
    : [];
}

/** The key's snapshots E2B's clients see: not those that hold its paused sandboxes, newest first. */
async function ownSnapshots(registry: SessionRegistry, owner: Owner): Promise<SnapshotInfo[]> {
  const held = new Set((await registry.pauses.list(owner)).map((record) => record.snapshotId));
  return (await registry.snapshots.list(owner)).filter((snapshot) => !held.has(snapshot.id));
}

/** The key's snapshot a create's `templateID` names, if it names one (else it names an environment). */
export async function snapshotOfTemplate(
  registry: SessionRegistry,
  owner: Owner,
  templateId: string,
): Promise<SnapshotInfo | undefined> {
  const id = snapshotIdOf(templateId);
  const name = snapshotNameOf(templateId);
  if (id === undefined && name === undefined) return undefined;
  const snapshots = await ownSnapshots(registry, owner);
  if (id !== undefined) return snapshots.find((snapshot) => snapshot.id === id);
  return newestNamed(snapshots, name as string);
}

export interface SnapshotQuery {
  sandboxId?: string;
  name?: string;
  limit: number;
  /** The snapshot the previous page ended with. */
  after?: { createdAt: string; id: string };
}

export function parseSnapshotQuery(query: Record<string, string | undefined>): SnapshotQuery {
  const limit = query.limit === undefined ? MAX_PAGE_SIZE : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new E2bError(400, `limit must be an integer from 1 to ${MAX_PAGE_SIZE}.`);
  }
  for (const field of ['sandboxID', 'name'] as const) {
    if ((query[field]?.length ?? 0) > 256) throw new E2bError(400, `${field} is longer than 256 characters.`);
  }
  return {
    ...(query.sandboxID ? { sandboxId: query.sandboxID } : {}),
    ...(query.name ? { name: query.name } : {}),
    limit,
    ...(query.nextToken ? { after: parseToken(query.nextToken) } : {}),
  };
}

function parseToken(token: string): { createdAt: string; id: string } {
  const [createdAt, id] = Buffer.from(token.slice(0, 512), 'base64url').toString('utf8').split('\n');
  if (!createdAt || !id || !SNAPSHOT_ID.test(id)) throw new E2bError(400, 'nextToken is not one this server gave.');
  return { createdAt, id };
}

/** Newest first, then by id: the order pages follow. */
const before = (snapshot: SnapshotInfo, mark: { createdAt: string; id: string }): boolean =>
  snapshot.createdAt < mark.createdAt || (snapshot.createdAt === mark.createdAt && snapshot.id > mark.id);

/** One page of the key's snapshots, as E2B's SnapshotInfo (`snapshotID`, `names`), and the next page's token. */
export async function snapshotPage(
  registry: SessionRegistry,
  owner: Owner,
  query: SnapshotQuery,
): Promise<{ page: { snapshotID: string; names: string[] }[]; nextToken?: string }> {
  const all = await ownSnapshots(registry, owner);
  const byName = query.name === undefined ? undefined : snapshotNameOf(query.name);
  const byId = query.name === undefined ? undefined : snapshotIdOf(query.name);
  const matching = [...all]
    .sort(newestFirst)
    .filter(
      (snapshot) =>
        (query.sandboxId === undefined || snapshot.sessionId === query.sandboxId) &&
        (query.name === undefined ||
          snapshot.id === byId ||
          (byName !== undefined && namesOf(snapshot, all).includes(byName))) &&
        (query.after === undefined || before(snapshot, query.after)),
    );
  const page = matching.slice(0, query.limit);
  const last = page.at(-1);
  const presented = page.map((snapshot) => ({ snapshotID: snapshot.id, names: namesOf(snapshot, all) }));
  return matching.length > page.length && last
    ? { page: presented, nextToken: Buffer.from(`${last.createdAt}\n${last.id}`, 'utf8').toString('base64url') }
    : { page: presented };
}

/** Deletes one of the key's snapshots; false when it has none by that id (the SDK's `false`). */
export async function deleteSnapshot(registry: SessionRegistry, owner: Owner, name: string): Promise<boolean> {
  const id = snapshotIdOf(name);
  const snapshotName = snapshotNameOf(name);
  const snapshots = await ownSnapshots(registry, owner);
  // By name: every snapshot taken under it, so that no older one takes the name back.
  const doomed = snapshots.filter((snapshot) =>
    id !== undefined ? snapshot.id === id : snapshotName !== undefined && snapshot.name === snapshotName,
  );
  for (const snapshot of doomed) await registry.snapshots.delete(owner, snapshot.id);
  return doomed.length > 0;
}

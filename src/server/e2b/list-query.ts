/**
 * The list call's query, as the SDK sends it: `state` (repeated, or comma-separated by older
 * SDKs), `metadata` (an URL-encoded `k=v&k2=v2` whose keys and values the SDK encoded once more),
 * `startedAfter` (an ISO time), `template`, `order` (`asc` or `desc`, the default: newest first),
 * `limit` and `nextToken`. A page ends with an `X-Next-Token` header when more sandboxes follow.
 *
 * Sandboxes are ordered by their cursor: when each was created, then its id. The creation time
 * stays when a sandbox is paused and resumed (its `startedAt` does not), so a token stays good; and
 * the pair orders sandboxes across a cluster's nodes too (an id is unique, a creation time need not
 * be), so a node that gathers every node's page (forwarding.ts) can merge them and hand out one token.
 */

import { MAX_PAGE_SIZE } from './control-schemas.js';
import { E2bError } from './errors.js';
import type { SandboxRow, SandboxState } from './sandbox-row.js';

export interface ListQuery {
  states: Set<string>;
  metadata: [string, string][];
  /** Only sandboxes whose `startedAt` is this time or later. */
  startedAfter?: Date;
  /** Only sandboxes made from this template (the id or name they were created with). */
  template?: string;
  /** Newest first (E2B's default), or oldest first. */
  descending: boolean;
  limit: number;
  /** Only sandboxes past this cursor, in the list's order (the last one of the page before). */
  after?: Cursor;
}

/**
 * The answer header, to a node gathering the list (forwarding.ts), with each listed sandbox's cursor
 * token, comma-separated, in the order of the page.
 */
export const CURSORS_HEADER = 'x-sandcell-cursors';

/** Where a sandbox stands in the list: its creation time (ms) and id. */
export interface Cursor {
  order: number;
  id: string;
}

const STATES = new Set(['running', 'paused']);
const MAX_FILTERS = 64;
const MAX_TEMPLATE_CHARS = 256;

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new E2bError(400, 'The metadata filter is not valid URL encoding.');
  }
};

export function parseListQuery(query: URLSearchParams): ListQuery {
  const asked = query.getAll('state').flatMap((states) => states.split(','));
  const states = new Set((asked.length > 0 ? asked : ['running', 'paused']).filter((state) => state !== ''));
  for (const state of states) {
    if (!STATES.has(state)) throw new E2bError(400, `Unknown state ${JSON.stringify(state)}: use running or paused.`);
  }
  const metadata = [...new URLSearchParams(query.get('metadata') ?? '')].map(
    ([key, value]) => [decode(key), decode(value)] as [string, string],
  );
  if (metadata.length > MAX_FILTERS) throw new E2bError(400, `At most ${MAX_FILTERS} metadata filters.`);
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? MAX_PAGE_SIZE : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new E2bError(400, `limit must be an integer from 1 to ${MAX_PAGE_SIZE}.`);
  }
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new E2bError(400, 'order must be asc or desc.');
  const since = query.get('startedAfter');
  const startedAfter = since ? new Date(since) : undefined;
  if (startedAfter && Number.isNaN(startedAfter.getTime()))
    throw new E2bError(400, 'startedAfter must be a time (RFC 3339, as 2026-01-31T12:00:00Z).');
  const template = query.get('template') || undefined;
  if (template && template.length > MAX_TEMPLATE_CHARS)
    throw new E2bError(400, `template is at most ${MAX_TEMPLATE_CHARS} characters.`);
  const token = query.get('nextToken');
  const after = token ? parseCursor(token) : undefined;
  if (token && !after) throw new E2bError(400, 'nextToken is not one this server gave.');
  return {
    states,
    metadata,
    descending: order === 'desc',
    limit,
    ...(startedAfter ? { startedAfter } : {}),
    ...(template ? { template } : {}),
    ...(after ? { after } : {}),
  };
}

/** The token of a cursor: opaque to clients, who send it back as `nextToken`. */
export const cursorToken = ({ order, id }: Cursor): string =>
  Buffer.from(`${order}\n${id}`, 'utf8').toString('base64url');

/** The cursor a token names, or undefined for one no server gave. */
export function parseCursor(token: string): Cursor | undefined {
  if (token.length > 256) return undefined;
  const [order, id, ...rest] = Buffer.from(token, 'base64url').toString('utf8').split('\n');
  const number = Number(order);
  if (rest.length > 0 || !Number.isSafeInteger(number) || number < 0 || !id || !/^[a-z0-9]{1,64}$/.test(id))
    return undefined;
  return { order: number, id };
}

/** Negative, zero or positive as `first` was created before, with or after `second`. */
export const compareCursors = (first: Cursor, second: Cursor): number =>
  first.order - second.order || (first.id < second.id ? -1 : first.id > second.id ? 1 : 0);

const cursorOf = (row: SandboxRow): Cursor => ({ order: row.order, id: row.id });

/**
 * One page of the sandboxes that match, with each one's cursor token, and the token of the next
 * page if there is one.
 */
export function listPage<Item extends { row: SandboxRow; state: SandboxState }>(
  sandboxes: Item[],
  query: ListQuery,
): { page: Item[]; cursors: string[]; nextToken?: string } {
  const { after, startedAfter, template } = query;
  const sign = query.descending ? -1 : 1;
  const matching = sandboxes
    .filter(
      ({ row, state }) =>
        // A sandbox the server paused while idle runs, to its clients.
        query.states.has(state === 'paused' ? 'paused' : 'running') &&
        (after === undefined || sign * compareCursors(cursorOf(row), after) > 0) &&
        (startedAfter === undefined || row.startedAt >= startedAfter) &&
        (template === undefined || row.templateId === template) &&
        query.metadata.every(([key, value]) => row.metadata[key] === value),
    )
    .sort((first, second) => sign * compareCursors(cursorOf(first.row), cursorOf(second.row)));
  const page = matching.slice(0, query.limit);
  const cursors = page.map(({ row }) => cursorToken(cursorOf(row)));
  const last = cursors.at(-1);
  return matching.length > page.length && last ? { page, cursors, nextToken: last } : { page, cursors };
}

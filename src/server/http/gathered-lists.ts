/**
 * The lists that every node of a cluster answers only in part (the sessions it holds live, and the
 * paused ones all see), and how the parts are merged into one answer (forwarding.ts asks every
 * live node, itself included). An entry for the same id from several nodes is the live one (a live
 * session is a `lost` marker to the others). E2B's list comes in pages: each node answers its first
 * `limit` after the client's token with each entry's cursor, and the merged page is the first
 * `limit` of them all by cursor, its token the last one's cursor.
 */
import type { IncomingMessage } from 'node:http';
import { MAX_PAGE_SIZE } from '../e2b/control-schemas.js';
import { compareCursors, parseCursor } from '../e2b/list-query.js';
import { E2B_PREFIX } from '../e2b/routes.js';
import { errorBody, HttpError } from './errors.js';

/** One node's answer to a list. */
export interface ListPart {
  status: number;
  contentType?: string;
  body: string;
  nextToken?: string;
  cursors?: string;
}

/** A list every node answers only in part, and how to merge the parts. */
export interface GatheredList {
  path: RegExp;
  items(body: unknown): unknown[] | undefined;
  wrap(items: unknown[]): unknown;
  /** The door's error body for a list that could not be made whole (`code`: a sandcell code). */
  failure(code: string, message: string): unknown;
  /** The field naming an entry (`id` unless said). */
  idField?: string;
  /** The field (an ISO time) the merged list is ordered by, newest first. */
  newestFirst?: string;
  /**
   * A list in pages (E2B's): each node answers the first `limit` entries after the client's token,
   * with each entry's cursor (CURSORS_HEADER) and `X-Next-Token` when it has more; the merged page
   * is the first `limit` of them all by cursor, and its token the last one's cursor.
   */
  paged?: {
    limit(query: URLSearchParams): number;
    order(query: URLSearchParams): (first: string, second: string) => number;
  };
}

/**
 * Lists that every node answers only in part (the sessions it holds live, and the paused ones all
 * see): a node asks every live node, itself included, and answers their union. An entry for the same
 * id from several nodes is the live one (a live session is a `lost` marker to the others).
 */
export const LISTS: GatheredList[] = [
  {
    path: /^\/v1\/sessions\/?$/,
    items: (body) => (isObject(body) && Array.isArray(body.sessions) ? body.sessions : undefined),
    wrap: (items) => ({ sessions: items }),
    failure: v1Failure,
  },
  {
    path: /^\/v1\/conversations\/?$/,
    items: (body) => (isObject(body) && Array.isArray(body.conversations) ? body.conversations : undefined),
    wrap: (items) => ({ conversations: items }),
    failure: v1Failure,
    newestFirst: 'updatedAt',
  },
  {
    path: /^\/jupyter\/api\/(?:kernels|sessions)\/?$/,
    items: (body) => (Array.isArray(body) ? body : undefined),
    wrap: (items) => items,
    // Jupyter Server's shape; a client polling kernels takes a 503 for a passing failure, not for kernels gone.
    failure: (reason, message) => ({ message, reason }),
  },
  {
    path: new RegExp(`^${E2B_PREFIX}/+(?:v2/)?sandboxes\\/?$`),
    items: (body) => (Array.isArray(body) ? body : undefined),
    wrap: (items) => items,
    failure: (_code, message) => ({ code: 503, message }),
    idField: 'sandboxID',
    paged: {
      // One the node itself refuses is answered by its own 400 before this is used.
      limit: (query) => Number(query.get('limit') ?? MAX_PAGE_SIZE) || MAX_PAGE_SIZE,
      order: (query) => {
        const sign = query.get('order') === 'asc' ? 1 : -1;
        return (first, second) => {
          const [a, b] = [parseCursor(first), parseCursor(second)];
          return a && b ? sign * compareCursors(a, b) : 0;
        };
      },
    },
  },
];

/** /v1's error body, as every /v1 route answers one. */
function v1Failure(code: string, message: string): unknown {
  return errorBody(new HttpError(503, code, message));
}

export const MAX_LIST_BYTES = 16 * 1024 * 1024;

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The merged list of the nodes' answers (undefined: a node that did not answer), and its headers. */
export function mergeList(
  list: GatheredList,
  request: IncomingMessage,
  answers: (ListPart | undefined)[],
  withoutCursors: (index: number) => void,
): { items: unknown[]; headers: Record<string, string> } {
  const idField = list.idField ?? 'id';
  const byId = new Map<string, { item: unknown; cursor?: string }>();
  const unnamed: unknown[] = [];
  let more = false;
  for (const [index, answer] of answers.entries()) {
    if (answer?.status !== 200) continue;
    let items: unknown[] | undefined;
    try {
      items = list.items(JSON.parse(answer.body));
    } catch {
      items = undefined;
    }
    const cursors = answer.cursors ? answer.cursors.split(',') : [];
    if (list.paged && items && cursors.length !== items.length) {
      withoutCursors(index);
      continue;
    }
    if (answer.nextToken) more = true;
    for (const [position, item] of (items ?? []).entries()) {
      const id = isObject(item) && typeof item[idField] === 'string' ? item[idField] : undefined;
      if (id === undefined) unnamed.push(item);
      else if (!byId.has(id) || (isObject(item) && item.state === 'running'))
        byId.set(id, { item, cursor: cursors[position] });
    }
  }
  let entries = [...byId.values()];
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const { paged } = list;
  if (paged) {
    const query = new URL(request.url ?? '/', 'http://request.invalid').searchParams;
    const order = paged.order(query);
    entries.sort((first, second) => order(first.cursor ?? '', second.cursor ?? ''));
    const limit = paged.limit(query);
    if (entries.length > limit) more = true;
    entries = entries.slice(0, limit);
    const last = entries.at(-1)?.cursor;
    if (more && last) headers['x-next-token'] = last;
  }
  const merged = [...entries.map((entry) => entry.item), ...(paged ? [] : unnamed)];
  const field = list.newestFirst;
  if (field !== undefined) {
    const time = (item: unknown) => (isObject(item) && typeof item[field] === 'string' ? String(item[field]) : '');
    merged.sort((a, b) => time(b).localeCompare(time(a)));
  }
  return { items: merged, headers };
}

/**
 * The list call's query: `state`, `metadata` (an URL-encoded `k=v&k2=v2`
 * whose keys and values the SDK encoded once more), `limit` and `nextToken`.
 * A page ends with an `X-Next-Token` header when more sandboxes follow.
 */

import { MAX_PAGE_SIZE } from './control-schemas.js';
import { E2bError } from './errors.js';
import type { SandboxRow, SandboxState } from './sandbox-table.js';

export interface ListQuery {
  states: Set<string>;
  metadata: [string, string][];
  limit: number;
  /** Sandboxes created after this one (its order: its creation time, unique within the server). */
  after: number;
}

const STATES = new Set(['running', 'paused']);
const MAX_FILTERS = 64;

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new E2bError(400, 'The metadata filter is not valid URL encoding.');
  }
};

export function parseListQuery(query: Record<string, string | undefined>): ListQuery {
  const states = new Set((query.state ?? 'running,paused').split(',').filter((state) => state !== ''));
  for (const state of states) {
    if (!STATES.has(state)) throw new E2bError(400, `Unknown state ${JSON.stringify(state)}: use running or paused.`);
  }
  const metadata = [...new URLSearchParams(query.metadata ?? '')].map(
    ([key, value]) => [decode(key), decode(value)] as [string, string],
  );
  if (metadata.length > MAX_FILTERS) throw new E2bError(400, `At most ${MAX_FILTERS} metadata filters.`);
  const limit = query.limit === undefined ? MAX_PAGE_SIZE : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new E2bError(400, `limit must be an integer from 1 to ${MAX_PAGE_SIZE}.`);
  }
  return { states, metadata, limit, after: parseNextToken(query.nextToken) };
}

function parseNextToken(token: string | undefined): number {
  if (token === undefined || token === '') return -1;
  const sequence = Number(Buffer.from(token, 'base64url').toString('utf8'));
  if (!Number.isSafeInteger(sequence) || sequence < 0)
    throw new E2bError(400, 'nextToken is not one this server gave.');
  return sequence;
}

/** One page of the sandboxes that match, and the token of the next page if there is one. */
export function listPage<Item extends { row: SandboxRow; state: SandboxState }>(
  sandboxes: Item[],
  query: ListQuery,
): { page: Item[]; nextToken?: string } {
  const matching = sandboxes.filter(
    ({ row, state }) =>
      // A sandbox the server paused while idle runs, to its clients.
      query.states.has(state === 'paused' ? 'paused' : 'running') &&
      row.order > query.after &&
      query.metadata.every(([key, value]) => row.metadata[key] === value),
  );
  const page = matching.slice(0, query.limit);
  const last = page.at(-1);
  return matching.length > page.length && last
    ? { page, nextToken: Buffer.from(String(last.row.order), 'utf8').toString('base64url') }
    : { page };
}

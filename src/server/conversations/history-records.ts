/**
 * The on-disk form of a conversation's history: one JSON record per line,
 * appended as the conversation changes (conversation-journal.ts writes them).
 *
 * - `conversation` (always the first line): who owns it and what it is.
 * - `turn`: the whole turn as it stands now; a later record of the same turn id
 *   replaces an earlier one, so a turn is written again as it grows, and the
 *   title, the time and the count of dropped turns ride along.
 * - `image`: an image an output links to, base64 (the images are part of the
 *   history a user sees and exports, and are bounded with it).
 * - `mode`: the view a client chose for it (chat or notebook), the latest wins.
 *
 * Reading is the other half: the last line of a file the server was killed
 * while writing may be torn (no newline), and is skipped; a damaged record in
 * the middle is skipped too (counted, so the caller can log it); only a file
 * whose first line is not a valid `conversation` record is unreadable.
 */
import { z } from 'zod';
import { imageType } from '../../protocol/images.js';
import type { Turn } from '../../protocol/index.js';
import { MountedVolumesSchema } from '../v1/schemas.js';
import { ConversationImageParams, TurnSchema } from './schemas.js';

export const HISTORY_FORMAT_VERSION = 1;

const HeaderSchema = z.object({
  type: z.literal('conversation'),
  version: z.literal(HISTORY_FORMAT_VERSION),
  id: z.string().uuid(),
  ownerId: z.string().min(1).max(200),
  sessionId: z.string().max(200),
  createdAt: z.number().int().nonnegative(),
  title: z.string().max(1_000),
  titled: z.boolean(),
  mode: z.enum(['chat', 'notebook']).optional(),
  continuedFrom: z.object({ id: z.string().uuid(), title: z.string().max(1_000) }).optional(),
  volumes: MountedVolumesSchema.max(16).optional(),
});

const TurnRecordSchema = z.object({
  type: z.literal('turn'),
  title: z.string().max(1_000),
  titled: z.boolean(),
  updatedAt: z.number().int().nonnegative(),
  droppedTurns: z.number().int().nonnegative(),
  turn: TurnSchema,
});

const ImageRecordSchema = z.object({
  type: z.literal('image'),
  name: ConversationImageParams.shape.name,
  mimeType: z.string().refine((mimeType) => imageType(mimeType) !== undefined, 'not an image type'),
  data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'not base64'),
});

const ModeRecordSchema = z.object({ type: z.literal('mode'), mode: z.enum(['chat', 'notebook']) });

export type HeaderRecord = z.output<typeof HeaderSchema>;
export type ModeRecord = z.output<typeof ModeRecordSchema>;
export type TurnRecord = z.output<typeof TurnRecordSchema>;
export type ImageRecord = z.output<typeof ImageRecordSchema>;
export type HistoryRecord = HeaderRecord | TurnRecord | ImageRecord | ModeRecord;

/** A record as one line of the file. */
export function encodeRecord(record: HistoryRecord): string {
  return `${JSON.stringify(record)}\n`;
}

/** What a history file holds, replayed. */
export interface ReadHistory {
  header: HeaderRecord;
  title: string;
  titled: boolean;
  updatedAt: number;
  droppedTurns: number;
  mode?: 'chat' | 'notebook';
  /** In the order they were first written; a turn the server stopped during is marked as such. */
  turns: Turn[];
  images: Map<string, { mimeType: string; data: Buffer }>;
  /** Damaged records skipped (a torn last line is not counted: it is what a crash leaves). */
  skipped: number;
  /** Whether the last line was torn. */
  torn: boolean;
}

export class UnreadableHistoryError extends Error {}

/** Replays a history file's text; throws UnreadableHistoryError when its first record is not a conversation. */
export function readHistory(text: string): ReadHistory {
  const lines = text.split('\n');
  // A file that ends in a newline leaves '' last; anything else last is a record cut short.
  const tail = lines.pop() ?? '';
  const torn = tail !== '';
  const [first, ...rest] = lines;
  const header = first === undefined ? undefined : HeaderSchema.safeParse(parseJson(first));
  if (!header?.success) throw new UnreadableHistoryError('the first record is not a conversation');
  const history: ReadHistory = {
    header: header.data,
    title: header.data.title,
    titled: header.data.titled,
    updatedAt: header.data.createdAt,
    droppedTurns: 0,
    ...(header.data.mode ? { mode: header.data.mode } : {}),
    turns: [],
    images: new Map(),
    skipped: 0,
    torn,
  };
  const positions = new Map<string, number>();
  for (const line of rest) {
    const json = parseJson(line);
    const kind = (json as { type?: unknown } | undefined)?.type;
    const parsed =
      kind === 'turn'
        ? TurnRecordSchema.safeParse(json)
        : kind === 'image'
          ? ImageRecordSchema.safeParse(json)
          : kind === 'mode'
            ? ModeRecordSchema.safeParse(json)
            : undefined;
    if (!parsed?.success) {
      history.skipped++;
      continue;
    }
    const record = parsed.data;
    if (record.type === 'mode') {
      history.mode = record.mode;
      continue;
    }
    if (record.type === 'image') {
      history.images.set(record.name, { mimeType: record.mimeType, data: Buffer.from(record.data, 'base64') });
      continue;
    }
    history.title = record.title;
    history.titled = record.titled;
    history.updatedAt = Math.max(history.updatedAt, record.updatedAt);
    history.droppedTurns = record.droppedTurns;
    const position = positions.get(record.turn.id);
    if (position === undefined) {
      positions.set(record.turn.id, history.turns.length);
      history.turns.push(record.turn as Turn);
    } else {
      history.turns[position] = record.turn as Turn;
    }
  }
  history.turns = history.turns.map(stoppedByRestart);
  return history;
}

function parseJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** A turn still running when the server stopped: what it did is kept, and it says it was cut short. */
function stoppedByRestart(turn: Turn): Turn {
  if (turn.status !== 'running') return turn;
  return {
    ...turn,
    status: 'error',
    error: {
      code: 'server-restarted',
      message: 'The server stopped during this turn; what it had done by then is kept.',
    },
    steps: turn.steps.map((step) => {
      if (step.type !== 'code' || !['awaiting-approval', 'ready', 'running'].includes(step.status)) return step;
      const { approvalId: _approvalId, ...rest } = step;
      return { ...rest, status: 'skipped' as const, skipReason: 'cancelled' as const };
    }),
  };
}

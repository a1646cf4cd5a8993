/**
 * Conversations that move with a drain, in a cluster. A conversation's history is its node's (a
 * file in its state directory, conversation-journal.ts); its session pauses to the shared store
 * like any other. A draining node hands each history over to the store as well, with its summary
 * for lists, and removes its own file; the node that a request for it reaches next takes it up
 * (its history into that node's state directory, its session resumed at its next turn). So a
 * conversation is never "not found" while its node is away, and a node that comes back under its
 * name holds no stale copy of one that moved on.
 *
 *   conversations/<owner digest>/<id>.jsonl   its history file, as the journal wrote it
 *   conversations/<owner digest>/<id>.json    its summary, written last: a history is listed once whole
 *
 * The owner digest is the state directory's (state-directory.ts): a key finds only its own.
 */
import type { Logger } from 'pino';
import type { ConversationSummary } from '../../protocol/index.js';
import type { ObjectStore } from '../../store/object-store.js';
import { isConversationId, ownerDigest } from './state-directory.js';

const MAX_SUMMARY_BYTES = 64 * 1024;

export interface HandoverOptions {
  objects: () => Promise<ObjectStore>;
  /** The largest history file taken up (the state directory's own bound). */
  maxFileBytes: number;
  logger: Logger;
}

export class ConversationHandover {
  constructor(private readonly options: HandoverOptions) {}

  /** Hands a history over: its file, then its summary. */
  async put(ownerId: string, summary: ConversationSummary, history: Uint8Array): Promise<void> {
    const objects = await this.options.objects();
    await objects.write(historyKey(ownerId, summary.id), history);
    await objects.write(summaryKey(ownerId, summary.id), Buffer.from(JSON.stringify(summary)));
  }

  /** The history of the owner's conversation `id` if it was handed over, else undefined. */
  async take(ownerId: string, id: string): Promise<Uint8Array | undefined> {
    if (!isConversationId(id)) return undefined;
    const objects = await this.options.objects();
    if ((await objects.read(summaryKey(ownerId, id), MAX_SUMMARY_BYTES).catch(() => undefined)) === undefined)
      return undefined;
    return objects.read(historyKey(ownerId, id), this.options.maxFileBytes);
  }

  /** Forgets a handed-over history (taken up, or deleted): its summary first, so no list shows it half gone. */
  async remove(ownerId: string, id: string): Promise<void> {
    const objects = await this.options.objects();
    await objects.delete(summaryKey(ownerId, id));
    await objects.delete(historyKey(ownerId, id));
  }

  /** The summaries of the owner's handed-over conversations that no node has taken up yet. */
  async summaries(ownerId: string): Promise<ConversationSummary[]> {
    const objects = await this.options.objects();
    const prefix = `conversations/${ownerDigest(ownerId)}/`;
    const summaries: ConversationSummary[] = [];
    for await (const object of objects.list(prefix)) {
      if (!object.key.endsWith('.json')) continue;
      const bytes = await objects.read(object.key, MAX_SUMMARY_BYTES).catch(() => undefined);
      const summary = bytes === undefined ? undefined : parseSummary(bytes);
      if (summary && summaryKey(ownerId, summary.id) === object.key) summaries.push(summary);
      else this.options.logger.warn({ key: object.key }, 'skipped a handed-over conversation that cannot be read');
    }
    return summaries;
  }
}

function historyKey(ownerId: string, id: string): string {
  return `conversations/${ownerDigest(ownerId)}/${id}.jsonl`;
}

function summaryKey(ownerId: string, id: string): string {
  return `conversations/${ownerDigest(ownerId)}/${id}.json`;
}

function parseSummary(bytes: Uint8Array): ConversationSummary | undefined {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as Partial<ConversationSummary>;
    const fields = [value.id, value.title, value.sessionId, value.createdAt, value.updatedAt];
    if (!fields.every((field) => typeof field === 'string') || !isConversationId(String(value.id))) return undefined;
    return value as ConversationSummary;
  } catch {
    return undefined;
  }
}

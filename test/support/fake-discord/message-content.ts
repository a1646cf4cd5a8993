/**
 * Turns a create or edit body (JSON fields plus uploaded files) into a message version, with the
 * checks Discord makes: content length, embed and component counts, button ids, file count and
 * size, and the v10 rule that an edit's `attachments` lists every attachment to keep or add.
 */
import { DiscordApiError, invalidFormBody } from './discord-errors.js';
import type { MessageStore, MessageVersion, StoredAttachment } from './message-store.js';
import type { DiscordRequestBody } from './request-body.js';

const MAX_CONTENT_LENGTH = 2000;
const MAX_EMBEDS = 10;
const MAX_ACTION_ROWS = 5;
const MAX_FILES = 10;
const MAX_CUSTOM_ID_LENGTH = 100;

export interface VersionContext {
  store: MessageStore;
  channelId: string;
  uploadLimitBytes: number;
  /** The version being edited; absent when creating. */
  previous?: MessageVersion;
}

export function versionFromBody(body: DiscordRequestBody, context: VersionContext): MessageVersion {
  const { payload, files } = body;
  const previous = context.previous;
  const content = payload.content === undefined || payload.content === null ? undefined : String(payload.content);
  if (content !== undefined && content.length > MAX_CONTENT_LENGTH) {
    throw invalidFormBody('content', 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_CONTENT_LENGTH} or fewer in length.`);
  }
  const embeds = Array.isArray(payload.embeds) ? payload.embeds : undefined;
  if (embeds && embeds.length > MAX_EMBEDS) {
    throw invalidFormBody('embeds', 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_EMBEDS} or fewer in length.`);
  }
  const components = Array.isArray(payload.components) ? payload.components : undefined;
  if (components) checkComponents(components);
  if (files.length > MAX_FILES) {
    throw invalidFormBody('files', 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_FILES} or fewer in length.`);
  }
  for (const file of files) {
    if (file.bytes.length > context.uploadLimitBytes) throw new DiscordApiError(413, 40005, 'Request entity too large');
  }
  const attachments = resolveAttachments(body, context);
  const version: MessageVersion = {
    content: content ?? previous?.content ?? '',
    embeds: embeds ?? previous?.embeds ?? [],
    components: components ?? previous?.components ?? [],
    attachments,
    flags: typeof payload.flags === 'number' ? payload.flags : (previous?.flags ?? 0),
    at: new Date().toISOString(),
  };
  const empty =
    version.content === '' &&
    version.embeds.length === 0 &&
    version.components.length === 0 &&
    version.attachments.length === 0;
  if (empty && !previous) throw new DiscordApiError(400, 50006, 'Cannot send an empty message');
  return version;
}

function resolveAttachments(body: DiscordRequestBody, context: VersionContext): StoredAttachment[] {
  const listed = Array.isArray(body.payload.attachments)
    ? (body.payload.attachments as Record<string, unknown>[])
    : undefined;
  const upload = (index: number): StoredAttachment | undefined => {
    const file = body.files.find((candidate) => candidate.index === index);
    if (!file) return undefined;
    const entry = listed?.find((attachment) => String(attachment.id) === String(index));
    return {
      ...context.store.newAttachment(context.channelId, {
        filename: typeof entry?.filename === 'string' ? entry.filename : file.filename,
        contentType: file.contentType,
        bytes: file.bytes,
      }),
      description: typeof entry?.description === 'string' ? entry.description : null,
    };
  };
  if (!listed) {
    const added = body.files.map((file) => upload(file.index)!);
    return [...(context.previous?.attachments ?? []), ...added];
  }
  const result: StoredAttachment[] = [];
  for (const entry of listed) {
    const id = String(entry.id);
    const kept = context.previous?.attachments.find((attachment) => attachment.id === id);
    const attachment = kept ?? (/^\d{1,2}$/.test(id) ? upload(Number(id)) : undefined);
    if (!attachment) throw invalidFormBody('attachments', 'ATTACHMENT_NOT_FOUND', `Unknown attachment id ${id}.`);
    result.push(attachment);
  }
  return result;
}

function checkComponents(rows: unknown[]): void {
  if (rows.length > MAX_ACTION_ROWS) {
    throw invalidFormBody('components', 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_ACTION_ROWS} or fewer in length.`);
  }
  for (const row of rows as Record<string, unknown>[]) {
    for (const component of (Array.isArray(row.components) ? row.components : []) as Record<string, unknown>[]) {
      const customId = component.custom_id;
      if (component.type === 2 && component.style !== 5 && typeof customId !== 'string') {
        throw invalidFormBody('components', 'BUTTON_COMPONENT_CUSTOM_ID_REQUIRED', 'A custom id is required');
      }
      if (typeof customId === 'string' && customId.length > MAX_CUSTOM_ID_LENGTH) {
        throw invalidFormBody(
          'components',
          'BASE_TYPE_MAX_LENGTH',
          `Must be ${MAX_CUSTOM_ID_LENGTH} or fewer in length.`,
        );
      }
    }
  }
}

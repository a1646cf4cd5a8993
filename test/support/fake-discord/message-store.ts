/**
 * Every message posted in the fake (by the bot or by test users), with each edit kept as a version,
 * and every attachment's bytes (the CDN route serves them). `toPayload` renders Discord's v10
 * message object from the latest version.
 */

import { channelPayload, memberPayload, userPayload } from './payloads.js';
import type { NextSnowflake } from './snowflakes.js';
import type { FakeWorld } from './world.js';

export interface StoredAttachment {
  id: string;
  channelId: string;
  filename: string;
  contentType: string;
  description: string | null;
  bytes: Buffer;
}

export interface MessageVersion {
  content: string;
  embeds: unknown[];
  components: unknown[];
  attachments: StoredAttachment[];
  flags: number;
  at: string;
}

export interface StoredMessage {
  id: string;
  channelId: string;
  authorId: string;
  createdAt: string;
  versions: MessageVersion[];
  deleted: boolean;
  type: number;
  mentionIds: string[];
  referencedMessageId: string | null;
  nonce: string | number | null;
  /** Set on messages an interaction answer created (they come from the app's webhook). */
  webhookId: string | null;
  interaction: { id: string; userId: string } | null;
  threadId: string | null;
}

export const MessageFlag = { ephemeral: 64, loading: 128 } as const;

export class MessageStore {
  private readonly messages = new Map<string, StoredMessage>();
  readonly attachments = new Map<string, StoredAttachment>();

  constructor(
    private readonly world: FakeWorld,
    private readonly nextId: NextSnowflake,
    /** Known once the server listens. */
    private readonly baseUrl: () => string,
  ) {}

  add(fields: Omit<StoredMessage, 'id' | 'createdAt' | 'deleted' | 'versions' | 'threadId'>, first: MessageVersion) {
    const message: StoredMessage = {
      ...fields,
      id: this.nextId(),
      createdAt: new Date().toISOString(),
      deleted: false,
      versions: [first],
      threadId: null,
    };
    this.messages.set(message.id, message);
    for (const attachment of first.attachments) this.attachments.set(attachment.id, attachment);
    const channel = this.world.channels.get(message.channelId);
    if (channel) channel.lastMessageId = message.id;
    return message;
  }

  addVersion(message: StoredMessage, version: MessageVersion): void {
    message.versions.push(version);
    for (const attachment of version.attachments) this.attachments.set(attachment.id, attachment);
  }

  newAttachment(channelId: string, file: { filename: string; contentType: string; bytes: Buffer }) {
    return { id: this.nextId(), channelId, description: null, ...file };
  }

  get(channelId: string, messageId: string): StoredMessage | undefined {
    const message = this.messages.get(messageId);
    return message && message.channelId === channelId && !message.deleted ? message : undefined;
  }

  byId(messageId: string): StoredMessage | undefined {
    return this.messages.get(messageId);
  }

  inChannel(channelId: string): StoredMessage[] {
    return [...this.messages.values()].filter((message) => message.channelId === channelId);
  }

  attachmentUrl(attachment: StoredAttachment): string {
    return `${this.baseUrl()}/attachments/${attachment.channelId}/${attachment.id}/${encodeURIComponent(attachment.filename)}`;
  }

  toPayload(message: StoredMessage, forGateway = false): Record<string, unknown> {
    const latest = message.versions.at(-1)!;
    const author = this.world.user(message.authorId)!;
    const channel = this.world.channels.get(message.channelId);
    const guild = channel ? this.world.guildOf(channel) : undefined;
    const referenced = message.referencedMessageId ? this.messages.get(message.referencedMessageId) : undefined;
    const thread = message.threadId ? this.world.channels.get(message.threadId) : undefined;
    const mentions = message.mentionIds.map((id) => this.world.user(id)).filter((user) => user !== undefined);
    return {
      id: message.id,
      type: message.type,
      channel_id: message.channelId,
      author: userPayload(author),
      content: latest.content,
      timestamp: message.createdAt,
      edited_timestamp: message.versions.length > 1 ? latest.at : null,
      tts: false,
      mention_everyone: false,
      mentions: mentions.map(userPayload),
      mention_roles: [],
      attachments: latest.attachments.map((attachment) => ({
        id: attachment.id,
        filename: attachment.filename,
        ...(attachment.description ? { description: attachment.description } : {}),
        size: attachment.bytes.length,
        url: this.attachmentUrl(attachment),
        proxy_url: this.attachmentUrl(attachment),
        content_type: attachment.contentType,
      })),
      embeds: latest.embeds,
      components: latest.components,
      pinned: false,
      flags: latest.flags,
      ...(message.nonce !== null ? { nonce: message.nonce } : {}),
      ...(message.webhookId ? { webhook_id: message.webhookId, application_id: message.webhookId } : {}),
      ...(message.interaction
        ? {
            interaction_metadata: {
              id: message.interaction.id,
              type: 3,
              user: userPayload(this.world.user(message.interaction.userId)!),
              authorizing_integration_owners: { 0: guild?.id ?? '0' },
            },
          }
        : {}),
      ...(referenced
        ? {
            message_reference: {
              type: 0,
              message_id: referenced.id,
              channel_id: referenced.channelId,
              guild_id: guild?.id,
            },
            referenced_message: this.toPayload(referenced),
          }
        : {}),
      ...(thread ? { thread: channelPayload(this.world, thread) } : {}),
      // Gateway copies carry the channel type (discord.js builds an uncached DM channel from it) and the guild.
      ...(forGateway && channel ? { channel_type: channel.type } : {}),
      ...(forGateway && guild ? { guild_id: guild.id, member: memberPayload(guild, author, false) } : {}),
    };
  }
}

/**
 * What the fake holds between requests, and the few operations every route shares: posting a
 * message (stored, then dispatched to the bot as Discord does, with content hidden from a bot
 * without the message-content intent), editing one, and telling waiters that something changed.
 */
import type { FakeGateway } from './gateway.js';
import { Intent } from './gateway.js';
import type { MessageStore, MessageVersion, StoredMessage } from './message-store.js';
import { ChannelKind, type FakeChannel, type FakeWorld } from './world.js';

export interface PendingInteraction {
  id: string;
  token: string;
  channelId: string;
  userId: string;
  /** The message whose component was clicked. */
  messageId: string;
  createdAtMs: number;
  acknowledged: boolean;
  /** What `@original` names once answered: the clicked message (types 6, 7) or the reply (4, 5). */
  originalMessageId: string | null;
  answered: (answer: InteractionAnswer) => void;
}

export interface InteractionAnswer {
  /** The callback type: 4 reply, 5 deferred reply, 6 deferred update, 7 update. */
  type: number;
  data: Record<string, unknown> | undefined;
  /** The message the answer created or changed. */
  messageId: string;
}

export interface FakeDiscordSettings {
  token: string;
  uploadLimitBytes: number;
  requestLimitBytes: number;
  interactionDeadlineMs: number;
  log: (line: string) => void;
}

export class DiscordState {
  readonly typing = new Map<string, number>();
  readonly interactions = new Map<string, PendingInteraction>();
  readonly unknownRequests: string[] = [];
  /** Every REST request as `METHOD /path` (under /api/v10), in order: what the bot asked Discord to do. */
  readonly requests: string[] = [];
  /** Set by stopAnswering(): requests and gateway frames go unanswered, as when Discord cannot be reached. */
  silent = false;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly settings: FakeDiscordSettings,
    readonly world: FakeWorld,
    readonly store: MessageStore,
    readonly gateway: FakeGateway,
  ) {}

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed(): void {
    for (const listener of [...this.listeners]) listener();
  }

  post(
    channel: FakeChannel,
    fields: Partial<Omit<StoredMessage, 'id' | 'createdAt' | 'deleted' | 'versions' | 'threadId'>> & {
      authorId: string;
    },
    version: MessageVersion,
  ): StoredMessage {
    const message = this.store.add(
      {
        channelId: channel.id,
        type: fields.referencedMessageId ? 19 : 0,
        mentionIds: [],
        referencedMessageId: null,
        nonce: null,
        webhookId: null,
        interaction: null,
        ...fields,
      },
      version,
    );
    const ephemeral = (version.flags & 64) !== 0;
    if (!ephemeral) this.dispatchMessage('MESSAGE_CREATE', channel, message);
    this.changed();
    return message;
  }

  edit(message: StoredMessage, version: MessageVersion): void {
    this.store.addVersion(message, version);
    const channel = this.world.channels.get(message.channelId);
    if (channel && (version.flags & 64) === 0) this.dispatchMessage('MESSAGE_UPDATE', channel, message);
    this.changed();
  }

  private dispatchMessage(type: string, channel: FakeChannel, message: StoredMessage): void {
    const isDirect = channel.type === ChannelKind.directMessage;
    const botId = this.world.botUser.id;
    this.gateway.dispatch(
      type,
      (intents: number) => {
        const payload = this.store.toPayload(message, true);
        const mentioned = message.mentionIds.includes(botId);
        const readable = (intents & Intent.messageContent) !== 0 || isDirect || mentioned || message.authorId === botId;
        // Discord blanks these fields for bots without the privileged message-content intent.
        return readable ? payload : { ...payload, content: '', embeds: [], attachments: [], components: [] };
      },
      isDirect ? Intent.directMessages : Intent.guildMessages,
    );
  }
}

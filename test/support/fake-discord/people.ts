/**
 * What the test "people" do: say something in a channel, thread or DM (mentioning the bot,
 * replying, attaching files), and click a button on one of the bot's messages, which dispatches
 * INTERACTION_CREATE and waits for the bot's callback.
 */
import { randomBytes } from 'node:crypto';
import type { DiscordState, InteractionAnswer } from './discord-state.js';
import { channelPayload, memberPayload, userPayload } from './payloads.js';
import type { NextSnowflake } from './snowflakes.js';
import { ChannelKind, type FakeUser } from './world.js';

export interface UserSaysOptions {
  author: FakeUser;
  channelId: string;
  content: string;
  /** Prefixes `<@bot>` and lists the bot in `mentions`, as the Discord client does. */
  mentionBot?: boolean;
  /** The id of a message this one replies to (its author is mentioned, as Discord does by default). */
  replyTo?: string;
  attachments?: { name: string; bytes: Buffer | Uint8Array | string; contentType?: string }[];
}

/** A message as Discord renders it, with the two fields tests use most typed. */
export type PostedMessage = Record<string, unknown> & { id: string; channel_id: string };

export function userSays(state: DiscordState, options: UserSaysOptions): PostedMessage {
  const channel = state.world.channels.get(options.channelId);
  if (!channel) throw new Error(`fake-discord: no channel ${options.channelId}`);
  if (!state.gateway.identified) throw new Error('fake-discord: the bot has not identified on the gateway yet');
  const botId = state.world.botUser.id;
  const referenced = options.replyTo ? state.store.byId(options.replyTo) : undefined;
  if (options.replyTo && !referenced) throw new Error(`fake-discord: no message ${options.replyTo} to reply to`);
  const mentionIds = [
    ...(options.mentionBot ? [botId] : []),
    ...(referenced && referenced.authorId !== options.author.id ? [referenced.authorId] : []),
  ];
  const attachments = (options.attachments ?? []).map((file) =>
    state.store.newAttachment(channel.id, {
      filename: file.name,
      contentType: file.contentType ?? 'application/octet-stream',
      bytes: Buffer.from(file.bytes),
    }),
  );
  const message = state.post(
    channel,
    {
      authorId: options.author.id,
      mentionIds: [...new Set(mentionIds)],
      referencedMessageId: referenced?.id ?? null,
    },
    {
      content: options.mentionBot ? `<@${botId}> ${options.content}` : options.content,
      embeds: [],
      components: [],
      attachments,
      flags: 0,
      at: new Date().toISOString(),
    },
  );
  return state.store.toPayload(message) as PostedMessage;
}

export interface ClickButtonOptions {
  user: FakeUser;
  /** The bot's message (its id, or anything with an `id`) carrying the button. */
  message: string | { id: string };
  customId: string;
}

export function clickButton(state: DiscordState, nextId: NextSnowflake, options: ClickButtonOptions) {
  const messageId = typeof options.message === 'string' ? options.message : options.message.id;
  const message = state.store.byId(messageId);
  if (!message || message.deleted) throw new Error(`fake-discord: no message ${messageId} to click on`);
  const button = findButton(message.versions.at(-1)!.components, options.customId);
  if (!button) throw new Error(`fake-discord: message ${messageId} has no button "${options.customId}"`);
  if (button.disabled === true) throw new Error(`fake-discord: button "${options.customId}" is disabled`);
  const channel = state.world.channels.get(message.channelId)!;
  const guild = state.world.guildOf(channel);
  const interactionId = nextId();
  const answered = new Promise<InteractionAnswer>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`fake-discord: the bot did not answer the click on "${options.customId}"`));
    }, state.settings.interactionDeadlineMs);
    state.interactions.set(interactionId, {
      id: interactionId,
      token: `interaction-${randomBytes(24).toString('hex')}`,
      channelId: channel.id,
      userId: options.user.id,
      messageId,
      createdAtMs: Date.now(),
      acknowledged: false,
      originalMessageId: null,
      answered: (answer) => {
        clearTimeout(timer);
        resolve(answer);
      },
    });
  });
  const interaction = state.interactions.get(interactionId)!;
  const permissions = guild ? state.world.memberPermissions(guild, options.user.id).toString() : undefined;
  state.gateway.dispatch('INTERACTION_CREATE', {
    id: interactionId,
    application_id: state.world.botUser.id,
    type: 3,
    data: { custom_id: options.customId, component_type: 2 },
    ...(guild
      ? {
          guild_id: guild.id,
          guild: { id: guild.id, locale: 'en-US', features: [] },
          guild_locale: 'en-US',
          member: { ...memberPayload(guild, options.user), permissions },
        }
      : { user: userPayload(options.user) }),
    channel_id: channel.id,
    channel: channelPayload(state.world, channel),
    token: interaction.token,
    version: 1,
    message: state.store.toPayload(message),
    app_permissions: guild ? state.world.memberPermissions(guild, state.world.botUser.id).toString() : '0',
    locale: 'en-US',
    entitlements: [],
    authorizing_integration_owners: { 0: guild?.id ?? '0' },
    context: channel.type === ChannelKind.directMessage ? 1 : 0,
    attachment_size_limit: state.settings.uploadLimitBytes,
  });
  return answered;
}

function findButton(components: unknown[], customId: string): Record<string, unknown> | undefined {
  for (const component of components as Record<string, unknown>[]) {
    if (component.type === 2 && component.custom_id === customId) return component;
    if (Array.isArray(component.components)) {
      const inner = findButton(component.components, customId);
      if (inner) return inner;
    }
  }
  return undefined;
}

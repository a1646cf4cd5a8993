/**
 * Channel routes: get a channel, post / get / list / edit / delete messages (JSON or multipart with
 * files), the typing indicator, and threads (from a message, or standalone). Posting and making
 * threads need the bot's permission in the channel (world.ts computes it as Discord does); without
 * it Discord's 403 "Missing Permissions" (50013) answers.
 */
import {
  DiscordApiError,
  invalidFormBody,
  missingPermissions,
  unknownChannel,
  unknownMessage,
} from './discord-errors.js';
import type { DiscordState } from './discord-state.js';
import { Intent } from './gateway.js';
import { versionFromBody } from './message-content.js';
import { channelPayload } from './payloads.js';
import { noContent, ok, type Route, type RouteContext } from './route.js';
import { ChannelKind, type FakeChannel, Permission } from './world.js';

const isThread = (channel: FakeChannel) =>
  channel.type === ChannelKind.publicThread || channel.type === ChannelKind.privateThread;

function channelOf(state: DiscordState, channelId: string | undefined): FakeChannel {
  const channel = state.world.channels.get(channelId ?? '');
  if (!channel) throw unknownChannel();
  return channel;
}

function messageOf(context: RouteContext) {
  const channel = channelOf(context.state, context.params.channelId);
  const message = context.state.store.get(channel.id, context.params.messageId ?? '');
  if (!message) throw unknownMessage();
  return { channel, message };
}

function createThread(state: DiscordState, parent: FakeChannel, payload: Record<string, unknown>, id?: string) {
  if (parent.type !== ChannelKind.guildText) {
    throw new DiscordApiError(400, 50024, 'Cannot execute action on this channel type');
  }
  const type = id ? ChannelKind.publicThread : Number(payload.type);
  const needed = type === ChannelKind.privateThread ? Permission.createPrivateThreads : Permission.createPublicThreads;
  if (!state.world.botMay(parent, needed)) throw missingPermissions();
  const name = payload.name;
  if (typeof name !== 'string' || name.length < 1 || name.length > 100) {
    throw invalidFormBody('name', 'BASE_TYPE_BAD_LENGTH', 'Must be between 1 and 100 in length.');
  }
  const thread = state.world.addChannel({
    ...(id ? { id } : {}),
    type,
    name,
    guildId: parent.guildId,
    parentId: parent.id,
    ownerId: state.world.botUser.id,
  });
  const botId = state.world.botUser.id;
  state.gateway.dispatch(
    'THREAD_CREATE',
    {
      ...channelPayload(state.world, thread),
      newly_created: true,
      member: { id: thread.id, user_id: botId, join_timestamp: thread.createdAt, flags: 0 },
    },
    Intent.guilds,
  );
  state.changed();
  return thread;
}

export const channelRoutes: Route[] = [
  {
    method: 'GET',
    template: '/channels/:channelId',
    auth: true,
    handle: ({ state, params }) => ok(channelPayload(state.world, channelOf(state, params.channelId))),
  },
  {
    method: 'GET',
    template: '/channels/:channelId/messages',
    auth: true,
    handle: ({ state, params, query }) => {
      const channel = channelOf(state, params.channelId);
      const limit = Math.min(Math.max(Number(query.get('limit') ?? 50), 1), 100);
      const before = query.get('before');
      const after = query.get('after');
      const messages = state.store
        .inChannel(channel.id)
        .filter((message) => !message.deleted && (message.versions.at(-1)!.flags & 64) === 0)
        .filter((message) => (before ? BigInt(message.id) < BigInt(before) : true))
        .filter((message) => (after ? BigInt(message.id) > BigInt(after) : true))
        .reverse()
        .slice(0, limit);
      return ok(messages.map((message) => state.store.toPayload(message)));
    },
  },
  {
    method: 'POST',
    template: '/channels/:channelId/messages',
    auth: true,
    handle: async ({ state, params, body }) => {
      const channel = channelOf(state, params.channelId);
      if (
        !state.world.botMay(channel, isThread(channel) ? Permission.sendMessagesInThreads : Permission.sendMessages)
      ) {
        throw missingPermissions();
      }
      const request = await body();
      const version = versionFromBody(request, {
        store: state.store,
        channelId: channel.id,
        uploadLimitBytes: state.settings.uploadLimitBytes,
      });
      const reference = request.payload.message_reference as Record<string, unknown> | undefined;
      const referenced = reference ? state.store.byId(String(reference.message_id)) : undefined;
      if (reference && !referenced && reference.fail_if_not_exists !== false) {
        throw invalidFormBody('message_reference', 'MESSAGE_REFERENCE_UNKNOWN_MESSAGE', 'Unknown message');
      }
      const nonce = request.payload.nonce;
      const message = state.post(
        channel,
        {
          authorId: state.world.botUser.id,
          referencedMessageId: referenced?.id ?? null,
          nonce: typeof nonce === 'string' || typeof nonce === 'number' ? nonce : null,
        },
        version,
      );
      return ok(state.store.toPayload(message));
    },
  },
  {
    method: 'GET',
    template: '/channels/:channelId/messages/:messageId',
    auth: true,
    handle: (context) => ok(context.state.store.toPayload(messageOf(context).message)),
  },
  {
    method: 'PATCH',
    template: '/channels/:channelId/messages/:messageId',
    auth: true,
    handle: async (context) => {
      const { state } = context;
      const { channel, message } = messageOf(context);
      if (message.authorId !== state.world.botUser.id) {
        throw new DiscordApiError(403, 50005, 'Cannot edit a message authored by another user');
      }
      const version = versionFromBody(await context.body(), {
        store: state.store,
        channelId: channel.id,
        uploadLimitBytes: state.settings.uploadLimitBytes,
        previous: message.versions.at(-1)!,
      });
      state.edit(message, version);
      return ok(state.store.toPayload(message));
    },
  },
  {
    method: 'DELETE',
    template: '/channels/:channelId/messages/:messageId',
    auth: true,
    handle: (context) => {
      const { state } = context;
      const { channel, message } = messageOf(context);
      message.deleted = true;
      const guildId = channel.guildId ? { guild_id: channel.guildId } : {};
      state.gateway.dispatch('MESSAGE_DELETE', { id: message.id, channel_id: channel.id, ...guildId });
      state.changed();
      return noContent;
    },
  },
  {
    method: 'POST',
    template: '/channels/:channelId/typing',
    auth: true,
    handle: ({ state, params }) => {
      const channel = channelOf(state, params.channelId);
      state.typing.set(channel.id, (state.typing.get(channel.id) ?? 0) + 1);
      state.changed();
      return noContent;
    },
  },
  {
    method: 'POST',
    template: '/channels/:channelId/messages/:messageId/threads',
    auth: true,
    handle: async (context) => {
      const { state } = context;
      const { channel, message } = messageOf(context);
      if (message.threadId)
        throw new DiscordApiError(400, 160004, 'A thread has already been created for this message');
      const thread = createThread(state, channel, (await context.body()).payload, message.id);
      message.threadId = thread.id;
      return ok(channelPayload(state.world, thread));
    },
  },
  {
    method: 'POST',
    template: '/channels/:channelId/threads',
    auth: true,
    handle: async ({ state, params, body }) => {
      const channel = channelOf(state, params.channelId);
      const { payload } = await body();
      if (payload.type !== ChannelKind.publicThread && payload.type !== ChannelKind.privateThread) {
        // In v10 the thread type is required when no message starts the thread.
        throw invalidFormBody('type', 'BASE_TYPE_REQUIRED', 'This field is required');
      }
      return ok(channelPayload(state.world, createThread(state, channel, payload)));
    },
  },
  {
    method: 'PUT',
    template: '/channels/:channelId/thread-members/@me',
    auth: true,
    handle: ({ state, params }) => {
      channelOf(state, params.channelId);
      return noContent;
    },
  },
];

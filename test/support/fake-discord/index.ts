/**
 * A local Discord for tests: REST v10 + gateway on 127.0.0.1, faithful enough for the real
 * discord.js 14 client. Discord itself cannot be reached from the test machine.
 *
 * HOW A BOT CONNECTS (this is all it must pass):
 *
 *   const discord = await startFakeDiscord();
 *   const client = new Client({
 *     intents: [Guilds, GuildMessages, MessageContent, DirectMessages],
 *     partials: [Partials.Channel],        // needed for DMs, exactly as on real Discord
 *     rest: { api: discord.apiUrl },       // 'http://127.0.0.1:PORT/api'; discord.js appends /v10
 *   });
 *   await client.login(discord.token);
 *
 * discord.js finds the gateway from `GET /api/v10/gateway/bot` (its `url` is ws://127.0.0.1:PORT/gateway)
 * and resumes at READY's `resume_gateway_url`, the same address. Nothing else needs overriding; the
 * websocket speaks uncompressed JSON because zlib-sync is not installed (the fake refuses `compress`).
 * For a CLI: take the API base from an option or environment variable (e.g. DISCORD_API_URL) and hand
 * it to `rest.api`.
 *
 * Faithful details a bot will meet: messages in guild channels arrive with empty content unless the
 * bot asked for MessageContent or is mentioned; the bot's own messages come back as MESSAGE_CREATE;
 * an interaction must be answered within `interactionDeadlineMs` (Discord: 3 s) and only once;
 * files over `uploadLimitBytes` (Discord's default 10 MiB) are refused with 413 / code 40005; a
 * thread or message the bot's channel permissions (roles, then the channel's overwrites, which
 * `setPermissionOverwrite` changes) do not allow is refused with 403 / code 50013. `requests`
 * records what the bot asked; `stopAnswering()` makes Discord unreachable without closing anything.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { accountRoutes } from './account-routes.js';
import { channelRoutes } from './channel-routes.js';
import { DiscordState, type InteractionAnswer } from './discord-state.js';
import { FakeGateway, Intent } from './gateway.js';
import { createDiscordServer } from './http-server.js';
import { interactionRoutes } from './interaction-routes.js';
import { MessageStore, type MessageVersion } from './message-store.js';
import { channelPayload } from './payloads.js';
import { type ClickButtonOptions, clickButton, type PostedMessage, type UserSaysOptions, userSays } from './people.js';
import { createSnowflakes } from './snowflakes.js';
import { type FakeChannel, FakeWorld, type PermissionOverwrite } from './world.js';

export type { FakeChannel, FakeGuild, FakeRole, FakeUser, PermissionOverwrite } from './world.js';
export { Permission } from './world.js';
export type { ClickButtonOptions, InteractionAnswer, PostedMessage, UserSaysOptions };

export interface FakeDiscordOptions {
  /** @default a random token */
  token?: string;
  /** @default 10 MiB, Discord's upload limit for a guild without boosts */
  uploadLimitBytes?: number;
  /** @default 3000, Discord's deadline for the first answer to an interaction */
  interactionDeadlineMs?: number;
  /** @default 41250, what Discord sends */
  heartbeatIntervalMs?: number;
  /** Privileged intents switched on in the (fake) developer portal. @default MessageContent only */
  allowedPrivilegedIntents?: number;
  /** @default console.error with a [fake-discord] prefix */
  log?: (line: string) => void;
}

export interface MessageView {
  id: string;
  channelId: string;
  content: string;
  embeds: unknown[];
  components: unknown[];
  flags: number;
  attachments: { id: string; filename: string; contentType: string; bytes: Buffer }[];
  /** Every version, first to latest (one entry when never edited). */
  versions: MessageVersion[];
  deleted: boolean;
  ephemeral: boolean;
  /** The message this one replies to. */
  replyTo: string | null;
  /** For answers to a button click: who clicked. */
  interactionUserId: string | null;
}

export interface WaitForOptions {
  /** @default 30_000 */
  timeoutMs?: number;
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}) {
  const log = options.log ?? ((line: string) => console.error(`[fake-discord] ${line}`));
  const nextId = createSnowflakes();
  const world = new FakeWorld(nextId);
  const settings = {
    token: options.token ?? `fake.${nextId()}.token`,
    uploadLimitBytes: options.uploadLimitBytes ?? 10 * 1024 * 1024,
    requestLimitBytes: 10 * (options.uploadLimitBytes ?? 10 * 1024 * 1024) + 1024 * 1024,
    interactionDeadlineMs: options.interactionDeadlineMs ?? 3000,
    log,
  };
  let state: DiscordState | undefined;
  // The port is known only after listen; the server reads these through `state` per request.
  const addresses = { base: '', gateway: '' };
  const gateway = new FakeGateway({
    token: settings.token,
    world,
    get gatewayUrl() {
      return addresses.gateway;
    },
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
    allowedPrivilegedIntents: options.allowedPrivilegedIntents ?? Intent.messageContent,
    log,
    onChange: () => state?.changed(),
  });
  const store = new MessageStore(world, nextId, () => addresses.base);
  state = new DiscordState(settings, world, store, gateway);
  const routes = [...accountRoutes(() => addresses.gateway), ...channelRoutes, ...interactionRoutes];
  const server = createDiscordServer(state, routes);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  addresses.base = `http://127.0.0.1:${port}`;
  addresses.gateway = `ws://127.0.0.1:${port}/gateway`;
  const discordState = state;

  const view = (id: string): MessageView => {
    const message = store.byId(id)!;
    const latest = message.versions.at(-1)!;
    return {
      id: message.id,
      channelId: message.channelId,
      content: latest.content,
      embeds: latest.embeds,
      components: latest.components,
      flags: latest.flags,
      attachments: latest.attachments.map(({ id, filename, contentType, bytes }) => ({
        id,
        filename,
        contentType,
        bytes,
      })),
      versions: message.versions,
      deleted: message.deleted,
      ephemeral: (latest.flags & 64) !== 0,
      replyTo: message.referencedMessageId,
      interactionUserId: message.interaction?.userId ?? null,
    };
  };

  return {
    apiUrl: `${addresses.base}/api`,
    gatewayUrl: addresses.gateway,
    token: settings.token,
    botUser: world.botUser,
    guild: world.guild,
    otherGuild: world.otherGuild,
    channel: world.channel,
    randomChannel: world.randomChannel,
    otherChannel: world.otherChannel,
    users: world.users,
    roles: world.roles,
    /** Requests to routes the fake does not know (each also logged): a test can assert there are none. */
    unknownRequests: discordState.unknownRequests,
    /** Every REST request the bot made, as `METHOD /path` under /api/v10 (`POST /channels/1/messages/2/threads`). */
    requests: discordState.requests,
    gatewayStats: () => ({ ...gateway.stats, connected: gateway.connected }),
    userSays: (says: UserSaysOptions) => userSays(discordState, says),
    clickButton: (click: ClickButtonOptions) => clickButton(discordState, nextId, click),
    /** The DM channel between the bot and this person (the one the bot gets from POST /users/@me/channels). */
    directMessageChannel: (user: import('./world.js').FakeUser) => world.directMessageChannel(user),
    channelById: (id: string): FakeChannel | undefined => world.channels.get(id),
    /** Threads hanging from a channel, oldest first. */
    threadsOf: (channelId: string) => [...world.channels.values()].filter((channel) => channel.parentId === channelId),
    /** Every message the bot posted in a channel (ephemeral ones included), oldest first. */
    messagesIn: (channelId: string) =>
      store
        .inChannel(channelId)
        .filter((message) => message.authorId === world.botUser.id)
        .map((message) => view(message.id)),
    /** Every message in a channel, people's included. */
    transcript: (channelId: string) => store.inChannel(channelId).map((message) => view(message.id)),
    typingIn: (channelId: string) => discordState.typing.get(channelId) ?? 0,
    /** Resolves with the predicate's first truthy value, checked whenever the fake's state changes. */
    waitFor: <T>(predicate: () => T | undefined | null | false, waitOptions: WaitForOptions = {}) =>
      waitFor(discordState, predicate, waitOptions.timeoutMs ?? 30_000),
    /** Closes the bot's websocket with a resumable code (4000); events dispatched meanwhile are replayed on RESUME. */
    dropGateway: () => gateway.drop(),
    /**
     * Discord becomes unreachable, as when the network to it goes down, until close(): connections
     * stay open but nothing on them is answered — REST requests, gateway heartbeats, the close
     * handshake of a logout — and new connections hang the same way.
     */
    stopAnswering: () => {
      discordState.silent = true;
      gateway.silence();
    },
    /**
     * Sets a channel's permission overwrite for a role (the guild's id for @everyone) or a member, as
     * `PUT /channels/{id}/permissions/{overwrite}` does, and tells the bot (CHANNEL_UPDATE).
     */
    setPermissionOverwrite: (channelId: string, overwrite: PermissionOverwrite) => {
      const channel = world.channels.get(channelId);
      if (!channel?.guildId || channel.parentId) throw new Error(`fake-discord: ${channelId} is no guild channel`);
      const others = channel.permissionOverwrites.filter((existing) => existing.id !== overwrite.id);
      channel.permissionOverwrites = [...others, overwrite];
      gateway.dispatch('CHANNEL_UPDATE', channelPayload(world, channel), Intent.guilds);
      discordState.changed();
    },
    async close() {
      gateway.close();
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

export type FakeDiscord = Awaited<ReturnType<typeof startFakeDiscord>>;

function waitFor<T>(state: DiscordState, predicate: () => T | undefined | null | false, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const check = () => {
      const value = predicate();
      if (value === undefined || value === null || value === false) return false;
      stop();
      resolve(value);
      return true;
    };
    // The interval catches conditions on things outside the fake (files, processes) too.
    const interval = setInterval(check, 100);
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`fake-discord: waitFor timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const unsubscribe = state.onChange(check);
    function stop() {
      clearInterval(interval);
      clearTimeout(timer);
      unsubscribe();
    }
    check();
  });
}

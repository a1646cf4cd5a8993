/**
 * Routes about the bot itself and the people around it: gateway discovery (how discord.js finds the
 * websocket from its REST base), the current user, users, guild members, and opening a DM channel.
 */
import { DiscordApiError, invalidFormBody } from './discord-errors.js';
import type { DiscordState } from './discord-state.js';
import { channelPayload, memberPayload, userPayload } from './payloads.js';
import { ok, type Route } from './route.js';

export function accountRoutes(gatewayUrl: () => string): Route[] {
  return [
    { method: 'GET', template: '/gateway', auth: false, handle: () => ok({ url: gatewayUrl() }) },
    {
      method: 'GET',
      template: '/gateway/bot',
      auth: true,
      handle: () =>
        ok({
          url: gatewayUrl(),
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
        }),
    },
    {
      method: 'GET',
      template: '/users/@me',
      auth: true,
      handle: ({ state }) => ok({ ...userPayload(state.world.botUser), verified: true, mfa_enabled: false, flags: 0 }),
    },
    {
      method: 'GET',
      template: '/applications/@me',
      auth: true,
      handle: ({ state }) =>
        ok({
          id: state.world.botUser.id,
          name: state.world.botUser.username,
          flags: 0,
          bot_public: false,
          owner: null,
        }),
    },
    {
      method: 'GET',
      template: '/users/:userId',
      auth: true,
      handle: ({ state, params }) => ok(userPayload(knownUser(state, params.userId))),
    },
    {
      method: 'POST',
      template: '/users/@me/channels',
      auth: true,
      handle: async ({ state, body }) => {
        const { payload } = await body();
        const user = state.world.user(String(payload.recipient_id));
        if (!user) throw invalidFormBody('recipient_id', 'USER_UNKNOWN', 'Unknown User');
        return ok(channelPayload(state.world, state.world.directMessageChannel(user)));
      },
    },
    {
      method: 'GET',
      template: '/guilds/:guildId/members/:userId',
      auth: true,
      handle: ({ state, params }) => {
        const guild = state.world.guilds().find((candidate) => candidate.id === params.guildId);
        if (!guild) throw new DiscordApiError(404, 10004, 'Unknown Guild');
        const user = knownUser(state, params.userId);
        if (!guild.members.has(user.id)) throw new DiscordApiError(404, 10007, 'Unknown Member');
        return ok(memberPayload(guild, user));
      },
    },
  ];
}

function knownUser(state: DiscordState, id: string | undefined) {
  const user = state.world.user(id ?? '');
  if (!user) throw new DiscordApiError(404, 10013, 'Unknown User');
  return user;
}

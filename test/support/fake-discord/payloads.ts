/**
 * How the fake's population looks on the wire: Discord v10 user, role, member, channel and
 * GUILD_CREATE objects, with the fields discord.js reads to build its structures.
 */
import {
  ChannelKind,
  type FakeChannel,
  type FakeGuild,
  type FakeRole,
  type FakeUser,
  type FakeWorld,
} from './world.js';

export function userPayload(user: FakeUser): Record<string, unknown> {
  return {
    id: user.id,
    username: user.username,
    discriminator: '0',
    global_name: user.globalName,
    avatar: null,
    ...(user.bot ? { bot: true } : {}),
    public_flags: 0,
  };
}

export function rolePayload(role: FakeRole): Record<string, unknown> {
  return {
    id: role.id,
    name: role.name,
    color: 0,
    colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
    hoist: false,
    icon: null,
    unicode_emoji: null,
    position: role.position,
    permissions: role.permissions.toString(),
    managed: false,
    mentionable: false,
    flags: 0,
  };
}

/** A guild member; `withUser` false is the partial member Discord puts in MESSAGE_CREATE. */
export function memberPayload(guild: FakeGuild, user: FakeUser, withUser = true): Record<string, unknown> {
  return {
    ...(withUser ? { user: userPayload(user) } : {}),
    nick: null,
    avatar: null,
    roles: guild.members.get(user.id) ?? [],
    joined_at: guild.joinedAt,
    premium_since: null,
    deaf: false,
    mute: false,
    flags: 0,
    pending: false,
  };
}

export function channelPayload(world: FakeWorld, channel: FakeChannel): Record<string, unknown> {
  if (channel.type === ChannelKind.directMessage) {
    const recipient = world.user(channel.recipientId ?? '');
    return {
      id: channel.id,
      type: channel.type,
      last_message_id: channel.lastMessageId,
      flags: 0,
      recipients: recipient ? [userPayload(recipient)] : [],
    };
  }
  const common = {
    id: channel.id,
    type: channel.type,
    guild_id: channel.guildId,
    name: channel.name,
    last_message_id: channel.lastMessageId,
    rate_limit_per_user: 0,
    flags: 0,
  };
  if (channel.type === ChannelKind.publicThread || channel.type === ChannelKind.privateThread) {
    return {
      ...common,
      parent_id: channel.parentId,
      owner_id: channel.ownerId,
      message_count: 0,
      member_count: 1,
      total_message_sent: 0,
      thread_metadata: {
        archived: false,
        auto_archive_duration: 1440,
        archive_timestamp: channel.createdAt,
        locked: false,
        create_timestamp: channel.createdAt,
      },
    };
  }
  return {
    ...common,
    position: 0,
    parent_id: null,
    topic: null,
    nsfw: false,
    permission_overwrites: channel.permissionOverwrites.map(({ id, type, allow, deny }) => ({
      id,
      type,
      allow: allow.toString(),
      deny: deny.toString(),
    })),
  };
}

export function guildCreatePayload(world: FakeWorld, guild: FakeGuild): Record<string, unknown> {
  const channels = [...world.channels.values()].filter((channel) => channel.guildId === guild.id);
  return {
    id: guild.id,
    name: guild.name,
    icon: null,
    splash: null,
    discovery_splash: null,
    owner_id: guild.ownerId,
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    roles: guild.roles.map(rolePayload),
    emojis: [],
    stickers: [],
    features: [],
    mfa_level: 0,
    application_id: null,
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    max_members: 500_000,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: 0,
    premium_subscription_count: 0,
    preferred_locale: 'en-US',
    public_updates_channel_id: null,
    nsfw_level: 0,
    premium_progress_bar_enabled: false,
    joined_at: guild.joinedAt,
    large: false,
    unavailable: false,
    member_count: guild.members.size,
    voice_states: [],
    members: [...guild.members.keys()].map((id) => memberPayload(guild, world.user(id)!)),
    channels: channels.filter((channel) => channel.type === ChannelKind.guildText).map((c) => channelPayload(world, c)),
    threads: channels.filter((channel) => channel.parentId !== null).map((c) => channelPayload(world, c)),
    presences: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
  };
}

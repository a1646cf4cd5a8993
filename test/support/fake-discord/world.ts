/**
 * The fake's population: the bot, three people, a test guild (and a second one, for allow-lists),
 * their roles, channels, DM channels and threads (payloads.ts renders them as Discord's objects).
 */
import type { NextSnowflake } from './snowflakes.js';

export interface FakeUser {
  id: string;
  username: string;
  globalName: string | null;
  bot: boolean;
}

export interface FakeRole {
  id: string;
  name: string;
  position: number;
  permissions: bigint;
}

export const ChannelKind = { guildText: 0, directMessage: 1, publicThread: 11, privateThread: 12 } as const;

/** The permission bits the fake checks (Discord's PermissionFlagsBits). */
export const Permission = {
  administrator: 1n << 3n,
  viewChannel: 1n << 10n,
  sendMessages: 1n << 11n,
  createPublicThreads: 1n << 35n,
  createPrivateThreads: 1n << 36n,
  sendMessagesInThreads: 1n << 38n,
} as const;

const ALL_PERMISSIONS = (1n << 53n) - 1n;

/** A channel's permission overwrite for a role (type 0; the guild's id is @everyone) or a member (type 1). */
export interface PermissionOverwrite {
  id: string;
  type: 0 | 1;
  allow: bigint;
  deny: bigint;
}

export interface FakeChannel {
  id: string;
  type: number;
  name: string | null;
  guildId: string | null;
  /** For threads: the text channel they hang from. */
  parentId: string | null;
  /** For DM channels: the person at the other end. */
  recipientId: string | null;
  ownerId: string | null;
  createdAt: string;
  lastMessageId: string | null;
  /** Guild text channels only; threads take their parent's. */
  permissionOverwrites: PermissionOverwrite[];
}

export interface FakeGuild {
  id: string;
  name: string;
  ownerId: string;
  everyone: FakeRole;
  roles: FakeRole[];
  /** user id → role ids */
  members: Map<string, string[]>;
  joinedAt: string;
}

// The permissions a fresh server gives @everyone (view, send, embed, attach, history, threads, …).
const EVERYONE_PERMISSIONS =
  (1n << 10n) |
  (1n << 11n) |
  (1n << 14n) |
  (1n << 15n) |
  (1n << 16n) |
  (1n << 6n) |
  (1n << 18n) |
  (1n << 35n) |
  (1n << 38n);

export class FakeWorld {
  readonly botUser: FakeUser;
  readonly users: { alice: FakeUser; bob: FakeUser; carol: FakeUser };
  readonly guild: FakeGuild;
  readonly otherGuild: FakeGuild;
  readonly roles: { everyone: FakeRole; analysts: FakeRole; operators: FakeRole };
  readonly channel: FakeChannel;
  /** A second text channel of the test guild, for tests that change a channel's permissions. */
  readonly randomChannel: FakeChannel;
  readonly otherChannel: FakeChannel;
  readonly channels = new Map<string, FakeChannel>();
  private readonly usersById = new Map<string, FakeUser>();

  constructor(private readonly nextId: NextSnowflake) {
    this.botUser = this.addUser('sandcell-bot', 'sandcell', true);
    this.users = {
      alice: this.addUser('alice', 'Alice', false),
      bob: this.addUser('bob', 'Bob', false),
      carol: this.addUser('carol', 'Carol', false),
    };
    const guildId = nextId();
    const everyone = { id: guildId, name: '@everyone', position: 0, permissions: EVERYONE_PERMISSIONS };
    const analysts = { id: nextId(), name: 'analysts', position: 1, permissions: 0n };
    const operators = { id: nextId(), name: 'operators', position: 2, permissions: 0n };
    this.roles = { everyone, analysts, operators };
    this.guild = {
      id: guildId,
      name: 'sandcell test guild',
      ownerId: this.users.carol.id,
      everyone,
      roles: [everyone, analysts, operators],
      members: new Map([
        [this.botUser.id, []],
        [this.users.alice.id, [analysts.id]],
        [this.users.bob.id, []],
        [this.users.carol.id, [operators.id]],
      ]),
      joinedAt: new Date().toISOString(),
    };
    const otherGuildId = nextId();
    const otherEveryone = { id: otherGuildId, name: '@everyone', position: 0, permissions: EVERYONE_PERMISSIONS };
    this.otherGuild = {
      id: otherGuildId,
      name: 'another guild',
      ownerId: this.users.bob.id,
      everyone: otherEveryone,
      roles: [otherEveryone],
      members: new Map([
        [this.botUser.id, []],
        [this.users.alice.id, []],
        [this.users.bob.id, []],
      ]),
      joinedAt: new Date().toISOString(),
    };
    this.channel = this.addChannel({ type: ChannelKind.guildText, name: 'general', guildId });
    this.randomChannel = this.addChannel({ type: ChannelKind.guildText, name: 'random', guildId });
    this.otherChannel = this.addChannel({ type: ChannelKind.guildText, name: 'lobby', guildId: otherGuildId });
  }

  private addUser(username: string, globalName: string, bot: boolean): FakeUser {
    const user = { id: this.nextId(), username, globalName, bot };
    this.usersById.set(user.id, user);
    return user;
  }

  addChannel(fields: Partial<FakeChannel> & { type: number }): FakeChannel {
    const channel: FakeChannel = {
      id: fields.id ?? this.nextId(),
      name: null,
      guildId: null,
      parentId: null,
      recipientId: null,
      ownerId: null,
      createdAt: new Date().toISOString(),
      lastMessageId: null,
      permissionOverwrites: [],
      ...fields,
    };
    this.channels.set(channel.id, channel);
    return channel;
  }

  user(id: string): FakeUser | undefined {
    return this.usersById.get(id);
  }

  guilds(): FakeGuild[] {
    return [this.guild, this.otherGuild];
  }

  guildOf(channel: FakeChannel): FakeGuild | undefined {
    return this.guilds().find((guild) => guild.id === channel.guildId);
  }

  /** The DM channel between the bot and a person: one per person, as on Discord. */
  directMessageChannel(user: FakeUser): FakeChannel {
    for (const channel of this.channels.values()) {
      if (channel.type === ChannelKind.directMessage && channel.recipientId === user.id) return channel;
    }
    return this.addChannel({ type: ChannelKind.directMessage, recipientId: user.id });
  }

  memberPermissions(guild: FakeGuild, userId: string): bigint {
    const roleIds = guild.members.get(userId) ?? [];
    let permissions = guild.everyone.permissions;
    for (const role of guild.roles) if (roleIds.includes(role.id)) permissions |= role.permissions;
    return permissions;
  }

  /**
   * What a member may do in a guild channel (a thread: in its parent), computed as Discord does:
   * the owner and administrators may do anything; otherwise the roles' permissions, then the
   * channel's @everyone overwrite, its role overwrites together, then the member's own.
   */
  channelPermissions(channel: FakeChannel, userId: string): bigint {
    const parent = channel.parentId ? this.channels.get(channel.parentId) : undefined;
    const place = parent ?? channel;
    const guild = this.guildOf(place);
    if (!guild) return ALL_PERMISSIONS;
    if (guild.ownerId === userId) return ALL_PERMISSIONS;
    let permissions = this.memberPermissions(guild, userId);
    if ((permissions & Permission.administrator) !== 0n) return ALL_PERMISSIONS;
    const apply = (overwrite: { allow: bigint; deny: bigint } | undefined) => {
      if (overwrite) permissions = (permissions & ~overwrite.deny) | overwrite.allow;
    };
    const overwrites = place.permissionOverwrites;
    apply(overwrites.find((overwrite) => overwrite.type === 0 && overwrite.id === guild.id));
    const roleIds = guild.members.get(userId) ?? [];
    const roles = overwrites.filter((overwrite) => overwrite.type === 0 && roleIds.includes(overwrite.id));
    apply({
      allow: roles.reduce((bits, overwrite) => bits | overwrite.allow, 0n),
      deny: roles.reduce((bits, overwrite) => bits | overwrite.deny, 0n),
    });
    apply(overwrites.find((overwrite) => overwrite.type === 1 && overwrite.id === userId));
    return permissions;
  }

  /** Whether the bot may do all of `needed` in the channel. */
  botMay(channel: FakeChannel, needed: bigint): boolean {
    return (this.channelPermissions(channel, this.botUser.id) & needed) === needed;
  }
}

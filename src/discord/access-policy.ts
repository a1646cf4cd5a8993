/**
 * Who may use the bot, as the operator chose with --allow-guild,
 * --allow-channel and --allow-role, and who may press an approval's buttons.
 * A rule left empty allows everyone; a direct message has no guild or roles,
 * so it is allowed only when neither --allow-guild nor --allow-role is set
 * (and, with --allow-channel, only when the DM channel is listed).
 */

export interface AccessRules {
  guilds: readonly string[];
  channels: readonly string[];
  /** Role ids or names. */
  roles: readonly string[];
}

/** Where a message was sent and by whom, in the terms the rules use. */
export interface MessagePlace {
  guildId?: string;
  channelId: string;
  /** The channel a thread belongs to. */
  parentChannelId?: string;
  /** The author's roles in the guild (none in a DM). */
  roles: readonly { id: string; name: string }[];
}

function hasRole(roles: MessagePlace['roles'], wanted: readonly string[]): boolean {
  return roles.some((role) => wanted.includes(role.id) || wanted.includes(role.name));
}

/** Whether the bot answers a message sent at `place`. */
export function isAllowed(rules: AccessRules, place: MessagePlace): boolean {
  if (place.guildId === undefined && (rules.guilds.length > 0 || rules.roles.length > 0)) return false;
  if (rules.guilds.length > 0 && !rules.guilds.includes(place.guildId ?? '')) return false;
  if (
    rules.channels.length > 0 &&
    !rules.channels.includes(place.channelId) &&
    !(place.parentChannelId !== undefined && rules.channels.includes(place.parentChannelId))
  )
    return false;
  if (rules.roles.length > 0 && !hasRole(place.roles, rules.roles)) return false;
  return true;
}

/** Whether `userId` may press Run or Skip on code asked for by `askerId`: the asker, or a member with an approver role. */
export function mayApprove(
  askerId: string,
  userId: string,
  roles: MessagePlace['roles'],
  approverRoles: readonly string[],
): boolean {
  return userId === askerId || (approverRoles.length > 0 && hasRole(roles, approverRoles));
}

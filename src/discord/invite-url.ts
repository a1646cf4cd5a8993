/**
 * The permissions the bot asks for in its invite URL, and why each: read the
 * channel and its history (a reply refers to the question), send messages,
 * start a thread on a question and speak in it, and attach charts and files.
 */
import { PermissionFlagsBits } from 'discord.js';

export const BOT_PERMISSIONS =
  PermissionFlagsBits.ViewChannel |
  PermissionFlagsBits.ReadMessageHistory |
  PermissionFlagsBits.SendMessages |
  PermissionFlagsBits.CreatePublicThreads |
  PermissionFlagsBits.SendMessagesInThreads |
  PermissionFlagsBits.AttachFiles;

/** The URL that adds the bot (application `applicationId`) to a server with those permissions. */
export function inviteUrl(applicationId: string): string {
  return `https://discord.com/oauth2/authorize?client_id=${applicationId}&scope=bot&permissions=${BOT_PERMISSIONS}`;
}

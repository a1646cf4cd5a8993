/**
 * `sandcell discord`: the data chat as a Discord bot. Reads the token from
 * DISCORD_BOT_TOKEN, checks every flag before logging in, runs until SIGINT or
 * SIGTERM, then closes every conversation's sandbox and logs out (within a
 * bound: an unreachable Discord does not keep the process alive).
 */

import { DiscordBot } from '../discord/discord-bot.js';
import { DEFAULT_REPLY_FILE_LIMITS, type PublishFile } from '../discord/reply-files.js';
import { DEFAULT_FILE_TRANSFER_BYTES } from '../session/options.js';
import { createModel, openDataChat, toCliExit } from './agent-options.js';
import { backendFromOptions } from './backend-option.js';
import type { CommandIo } from './command-io.js';
import { processIo } from './command-io.js';
import type { DiscordCliOptions } from './discord-flags.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { limitSessionOptions } from './limit-options.js';
import { openLinkPublisher } from './link-publisher.js';
import { networkSessionOptions } from './network-options.js';
import { durationFlag, sizeFlag } from './unit-flags.js';

const SECRET_VARIABLES = ['DISCORD_BOT_TOKEN', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'AZURE_OPENAI_API_KEY'];

function count(flag: string, value: string, minimum: number): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < minimum) {
    throw new CliExit(EXIT_USAGE, `${flag} takes a whole number of at least ${minimum}; got ${JSON.stringify(value)}.`);
  }
  return number;
}

function apiUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value.replace(/\/+$/, '');
  } catch {}
  throw new CliExit(EXIT_USAGE, `--discord-api (DISCORD_API_URL) takes an http(s) URL; got ${JSON.stringify(value)}.`);
}

/**
 * `--idle-timeout` took minutes before every duration flag took units (a bare number being seconds):
 * a bare number here is refused rather than read as seconds, so a configuration written for minutes
 * (`--idle-timeout 30`) fails at start instead of closing conversations after 30 seconds.
 */
function idleTimeout(value: string): number {
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) {
    throw new CliExit(
      EXIT_USAGE,
      `--idle-timeout takes a duration with its unit, e.g. ${value.trim()}m for ${value.trim()} minutes; got ${JSON.stringify(value)}. (It took minutes before; a bare number would now mean seconds, as on every other flag.)`,
    );
  }
  return durationFlag('--idle-timeout', value, 1000);
}

/** A refused token or intent becomes a message saying what to fix. */
function loginFailure(error: unknown): unknown {
  const text =
    error instanceof Error ? `${error.name} ${error.message} ${(error as { code?: string }).code ?? ''}` : '';
  if (/TokenInvalid|invalid token|401/i.test(text)) {
    return new CliExit(
      EXIT_USAGE,
      'sandcell discord: Discord refused the token in DISCORD_BOT_TOKEN; reset it in the developer portal (your application → Bot).',
    );
  }
  if (/disallowed intents|4014/i.test(text)) {
    return new CliExit(
      EXIT_USAGE,
      'sandcell discord: Discord refused the Message Content intent; turn it on in the developer portal (your application → Bot → Privileged Gateway Intents).',
    );
  }
  return error;
}

/**
 * With --store: files too big for Discord are published to the store and linked. The store and its
 * links are proven now, not at the first big file.
 */
async function publishFileFor(options: DiscordCliOptions): Promise<{ publishFile: PublishFile } | undefined> {
  const publisher = await openLinkPublisher('discord', options);
  if (!publisher) return undefined;
  return {
    publishFile: async (session, file) => {
      const [published] = await publisher.publish(session.id, [file], (entry) =>
        session.files.stream(entry.path, { expectedBytes: entry.size }),
      );
      return published ?? { error: 'nothing was published' };
    },
  };
}

export async function discordCommand(options: DiscordCliOptions, io: CommandIo = processIo()): Promise<number> {
  const token = process.env.DISCORD_BOT_TOKEN?.trim();
  if (!token) {
    throw new CliExit(
      EXIT_USAGE,
      'sandcell: discord needs the bot token in DISCORD_BOT_TOKEN (from the Discord developer portal: your application → Bot → Reset Token).',
    );
  }
  const limits = limitSessionOptions(options);
  networkSessionOptions(options); // a bad --allow-host fails now
  const transferBytes = limits.fileTransferBytes ?? DEFAULT_FILE_TRANSFER_BYTES;
  const fileBytes = Math.min(sizeFlag('--max-attachment', options.maxAttachment), transferBytes);
  const idleTimeoutMs = idleTimeout(options.idleTimeout);
  const approvalTimeoutMs = durationFlag('--approval-timeout', options.approvalTimeout, 1000);
  const backend = io.backend ?? (await backendFromOptions(options));
  const secrets = SECRET_VARIABLES.map((name) => process.env[name] ?? '').filter((value) => value.length >= 4);
  const log = (line: string) => io.stderr.write(`${line}\n`);
  const bot = new DiscordBot({
    token,
    apiUrl: apiUrl(options.discordApi),
    rules: { guilds: options.allowGuild, channels: options.allowChannel, roles: options.allowRole },
    questionsPerMinute: count('--questions-per-minute', options.questionsPerMinute, 0),
    idleTimeoutMs,
    maxConversations: count('--max-conversations', options.maxConversations, 1),
    attachmentLimits: {
      fileBytes,
      conversationBytes: sizeFlag('--max-conversation-data', options.maxConversationData),
    },
    replyFileLimits: {
      maxFiles: Math.min(DEFAULT_REPLY_FILE_LIMITS.maxFiles, count('--max-reply-files', options.maxReplyFiles, 0)),
      maxBytes: DEFAULT_REPLY_FILE_LIMITS.maxBytes,
    },
    ...(options.approve ? { approval: { approverRoles: options.approverRole, timeoutMs: approvalTimeoutMs } } : {}),
    // Each conversation gets its own session; files go back to Discord, none are saved on the host.
    openChat: (hooks) =>
      openDataChat(
        { ...options, outputDir: undefined },
        { onEvent: hooks.onEvent, ...(hooks.approve ? { approve: hooks.approve } : {}), backend },
      ),
    ...((await publishFileFor(options)) ?? {}),
    secrets,
    log,
  });
  // Fail on a bad model configuration now, not at the first question.
  try {
    createModel(options);
  } catch (error) {
    throw toCliExit(error);
  }
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const { tag, invite } = await bot.start().catch((error: unknown) => {
      throw loginFailure(error);
    });
    log(`sandcell discord: logged in as ${tag}; Ctrl-C stops. Invite it to a server: ${invite}`);
    await stopped;
    log('sandcell discord: stopping: closing conversations and logging out.');
    return EXIT_OK;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    const { loggedOut } = await bot.stop();
    // The sandboxes are closed; what discord.js still waits on (a close handshake, requests retried
    // for a minute) needs nothing from us. The timer fires once main() has returned and the exit
    // code is set (promise continuations all run before a timer), and the process ends with it.
    if (!loggedOut) setTimeout(() => process.exit(), 0).unref();
  }
}

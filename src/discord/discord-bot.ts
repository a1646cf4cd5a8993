/**
 * The bot: a discord.js client that answers when mentioned in a guild channel
 * (starting a thread on the message, when its permissions there allow) or in a
 * direct message. Each thread or DM channel is one DiscordConversation from the
 * pool; follow-ups in the bot's own threads need no mention.
 */
import { once } from 'node:events';
import {
  type APIInteractionGuildMember,
  ChannelType,
  Client,
  Events,
  GatewayIntentBits,
  type Guild,
  type GuildMember,
  type Interaction,
  type Message,
  MessageFlags,
  Partials,
  PermissionFlagsBits,
  type SendableChannels,
  ThreadAutoArchiveDuration,
} from 'discord.js';
import { type AccessRules, isAllowed } from './access-policy.js';
import { ApprovalDesk } from './approval-desk.js';
import type { AttachmentLimits } from './attachment-limits.js';
import { ConversationPool } from './conversation-pool.js';
import { type ConversationSettings, DiscordConversation } from './discord-conversation.js';
import { failureReply } from './failure-reply.js';
import { inviteUrl } from './invite-url.js';
import { QuestionRateLimit } from './question-rate-limit.js';
import type { PublishFile, ReplyFileLimits } from './reply-files.js';

export interface DiscordBotOptions {
  token: string;
  /** Discord's REST API base (its gateway is found through it). @default https://discord.com/api */
  apiUrl?: string;
  rules: AccessRules;
  /** Questions per user per minute; 0: no limit. */
  questionsPerMinute: number;
  idleTimeoutMs: number;
  maxConversations: number;
  attachmentLimits: AttachmentLimits;
  replyFileLimits: ReplyFileLimits;
  /** With --store: files too big to attach are published there and linked. */
  publishFile?: PublishFile;
  /** Set with --approve. */
  approval?: { approverRoles: readonly string[]; timeoutMs: number };
  openChat: ConversationSettings['openChat'];
  /** Never posted. */
  secrets: readonly string[];
  log: (line: string) => void;
}

type Roles = { id: string; name: string }[];

/**
 * How long logging out may take. With Discord unreachable, discord.js waits for a close
 * handshake that never comes (and its requests retry for a minute): the sandboxes are closed by
 * then, so the bot stops waiting.
 */
export const LOGOUT_TIMEOUT_MS = 5_000;

/** A thread on the question needs both: making it, and answering in it. */
const THREAD_PERMISSIONS = [PermissionFlagsBits.CreatePublicThreads, PermissionFlagsBits.SendMessagesInThreads];

function memberRoles(member: GuildMember | APIInteractionGuildMember | null | undefined, guild: Guild | null): Roles {
  if (!member) return [];
  if (Array.isArray(member.roles)) {
    return member.roles.map((id) => ({ id, name: guild?.roles.cache.get(id)?.name ?? '' }));
  }
  return (member as GuildMember).roles.cache.map((role) => ({ id: role.id, name: role.name }));
}

function threadName(question: string, author: string): string {
  const firstLine = question.split('\n')[0]?.trim() ?? '';
  return (firstLine || `Question from ${author}`).slice(0, 90);
}

export class DiscordBot {
  readonly client: Client;
  private readonly pool: ConversationPool<DiscordConversation>;
  private readonly rateLimit: QuestionRateLimit;
  private readonly approvals: ApprovalDesk | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly options: DiscordBotOptions) {
    this.client = new Client({
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      // DM channels are not cached before their first message.
      partials: [Partials.Channel],
      // What the model writes must not ping @everyone or anyone else.
      allowedMentions: { parse: [], repliedUser: false },
      ...(options.apiUrl ? { rest: { api: options.apiUrl } } : {}),
    });
    this.rateLimit = new QuestionRateLimit(options.questionsPerMinute);
    this.approvals = options.approval ? new ApprovalDesk(options.approval) : undefined;
    this.pool = new ConversationPool({
      maxConversations: options.maxConversations,
      idleTimeoutMs: options.idleTimeoutMs,
      onClosed: (conversation, reason) => {
        const why =
          reason === 'idle'
            ? `This conversation was idle for ${options.idleTimeoutMs >= 60_000 ? `${Math.round(options.idleTimeoutMs / 60_000)} min` : `${Math.round(options.idleTimeoutMs / 1000)} s`}`
            : 'The bot needed room for another conversation';
        void conversation.channel
          .send(`${why}, so its sandbox is closed: variables and files are gone. A new question here starts afresh.`)
          .catch(() => {});
      },
    });
  }

  /** Logs in and resolves once the gateway is ready; returns the bot's tag and its invite URL. */
  async start(): Promise<{ tag: string; invite: string }> {
    this.client.on(Events.MessageCreate, (message) => void this.onMessage(message).catch(this.logError));
    this.client.on(
      Events.InteractionCreate,
      (interaction) => void this.onInteraction(interaction).catch(this.logError),
    );
    this.client.on(Events.Error, this.logError);
    const ready = once(this.client, Events.ClientReady);
    await this.client.login(this.options.token);
    await ready;
    const sweepMs = Math.max(1000, Math.min(60_000, Math.floor(this.options.idleTimeoutMs / 2)));
    this.sweeper = setInterval(() => void this.pool.closeIdle().catch(this.logError), sweepMs);
    const user = this.client.user;
    return { tag: user?.tag ?? 'the bot', invite: inviteUrl(this.client.application?.id ?? user?.id ?? 'ID') };
  }

  private readonly logError = (error: unknown): void => {
    this.log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  };

  private log(text: string): void {
    let line = text;
    for (const secret of this.options.secrets) if (secret.length >= 4) line = line.split(secret).join('[redacted]');
    this.options.log(`sandcell discord: ${line}`);
  }

  private async onMessage(message: Message): Promise<void> {
    const me = this.client.user;
    if (this.stopping || !me || message.author.bot || message.system) return;
    const channel = message.channel;
    const direct = channel.isDMBased();
    const ourThread = channel.isThread() && channel.ownerId === me.id;
    if (!direct && !ourThread && !message.mentions.users.has(me.id)) return;
    const allowed = isAllowed(this.options.rules, {
      ...(message.guildId ? { guildId: message.guildId } : {}),
      channelId: channel.id,
      ...(channel.isThread() && channel.parentId ? { parentChannelId: channel.parentId } : {}),
      roles: memberRoles(message.member, message.guild),
    });
    // Outside the operator's rules the bot stays silent: answering would invite probing.
    if (!allowed || !channel.isSendable()) return;
    const rate = this.rateLimit.take(message.author.id);
    if (!rate.allowed) {
      if (rate.tell) {
        await message.reply(
          `You have asked ${this.options.questionsPerMinute} questions in the last minute; ask again in ${rate.retryAfterSeconds} s.`,
        );
      }
      return;
    }
    const text = message.content.replace(new RegExp(`<@!?${me.id}>`, 'g'), '').trim();
    const target = await this.conversationChannel(message, text);
    let conversation: DiscordConversation;
    try {
      conversation = await this.pool.get(target.id, () => new DiscordConversation(target, this.settings()));
    } catch (error) {
      await target.send(failureReply(error, this.options.secrets, this.options.log));
      return;
    }
    await conversation.ask({ message, text });
    this.pool.touch(target.id);
  }

  /** Where the conversation of a message happens: its thread or DM, or a new thread on it when the bot may make one. */
  private async conversationChannel(message: Message, text: string): Promise<SendableChannels> {
    const channel = message.channel as SendableChannels;
    if (channel.isDMBased() || channel.isThread()) return channel;
    if (channel.type !== ChannelType.GuildText && channel.type !== ChannelType.GuildAnnouncement) return channel;
    // Where the bot may not make threads (or not speak in them), the channel itself is the conversation.
    const permissions = this.client.user ? channel.permissionsFor(this.client.user) : null;
    if (permissions && !permissions.has(THREAD_PERMISSIONS)) return channel;
    try {
      return await message.startThread({
        name: threadName(text, message.author.username),
        autoArchiveDuration: ThreadAutoArchiveDuration.OneDay,
      });
    } catch (error) {
      // Permissions not known yet, or changed meanwhile: the channel is the conversation all the same.
      const reason = error instanceof Error ? error.message : String(error);
      this.log(`could not start a thread in #${channel.name} (${reason}); answering in the channel.`);
      return channel;
    }
  }

  private settings(): ConversationSettings {
    return {
      openChat: this.options.openChat,
      attachmentLimits: this.options.attachmentLimits,
      replyFileLimits: this.options.replyFileLimits,
      ...(this.options.publishFile ? { publishFile: this.options.publishFile } : {}),
      ...(this.approvals ? { approvals: this.approvals } : {}),
      secrets: this.options.secrets,
      log: this.options.log,
    };
  }

  private async onInteraction(interaction: Interaction): Promise<void> {
    if (!interaction.isButton() || !ApprovalDesk.owns(interaction.customId)) return;
    if (!this.approvals) {
      await interaction.reply({ content: 'This bot is not asking for approvals.', flags: MessageFlags.Ephemeral });
      return;
    }
    await this.approvals.press(interaction, memberRoles(interaction.member, interaction.guild));
  }

  /**
   * Stops answering, closes every conversation's sandbox and logs out, waiting for Discord at most
   * LOGOUT_TIMEOUT_MS. `loggedOut` false: Discord did not answer, and discord.js may still hold
   * connections open (for up to a minute) that nothing of the bot needs any more.
   */
  async stop(): Promise<{ loggedOut: boolean }> {
    this.stopping = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.approvals?.skipAll();
    await this.pool.closeAll();
    let timer: NodeJS.Timeout | undefined;
    const loggedOut = await Promise.race([
      this.client.destroy().then(
        () => true,
        (error: unknown) => {
          this.logError(error);
          return true;
        },
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), LOGOUT_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!loggedOut)
      this.log(`Discord did not answer the logout within ${LOGOUT_TIMEOUT_MS / 1000} s; stopping without it.`);
    return { loggedOut };
  }
}

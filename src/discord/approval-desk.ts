/**
 * --approve in chat: before code runs, the bot posts it with Run and Skip
 * buttons and waits. Only the person who asked (or a member with an
 * --approver-role) may press them; anyone else gets a refusal only they see.
 * No answer within the timeout skips the code.
 */
import { randomUUID } from 'node:crypto';
import {
  ActionRowBuilder,
  AttachmentBuilder,
  ButtonBuilder,
  type ButtonInteraction,
  ButtonStyle,
  type Message,
  MessageFlags,
  type SendableChannels,
} from 'discord.js';
import type { ApprovalDecision, ApprovalRequest } from '../agents/index.js';
import { mayApprove } from './access-policy.js';
import { DISCORD_MESSAGE_LIMIT, fenced } from './message-split.js';

export const RUN_PREFIX = 'sandcell-run:';
export const SKIP_PREFIX = 'sandcell-skip:';

interface Pending {
  askerId: string;
  message?: Message;
  resolve: (decision: ApprovalDecision) => void;
  timer: NodeJS.Timeout;
}

export class ApprovalDesk {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly options: {
      approverRoles: readonly string[];
      timeoutMs: number;
    },
  ) {}

  /** Posts the code with Run / Skip and resolves with the decision of someone allowed to make it. */
  async request(channel: SendableChannels, askerId: string, request: ApprovalRequest): Promise<ApprovalDecision> {
    const id = randomUUID();
    const language = request.language === 'shell' ? 'bash' : 'python';
    const code = request.language === 'shell' ? `$ ${request.code.trimEnd()}` : request.code.trimEnd();
    const header = `<@${askerId}>, may I run this ${request.language === 'shell' ? 'command' : 'code'}? (attempt ${request.attempt}/${request.maxAttempts})`;
    const block = fenced(code, language);
    const inline = header.length + block.length + 1 < DISCORD_MESSAGE_LIMIT;
    const buttons = new ActionRowBuilder<ButtonBuilder>().addComponents(
      new ButtonBuilder().setCustomId(`${RUN_PREFIX}${id}`).setLabel('Run').setStyle(ButtonStyle.Success),
      new ButtonBuilder().setCustomId(`${SKIP_PREFIX}${id}`).setLabel('Skip').setStyle(ButtonStyle.Secondary),
    );
    const decision = new Promise<ApprovalDecision>((resolve) => {
      const timer = setTimeout(() => {
        const message = this.settle(id, { action: 'skip', reason: 'no one approved it in time' })?.message;
        void message
          ?.edit({ content: `${message.content}\n⏭ Skipped: no answer in time.`, components: [] })
          .catch(() => {});
      }, this.options.timeoutMs);
      timer.unref();
      this.pending.set(id, { askerId, resolve, timer });
    });
    try {
      const message = await channel.send({
        content: inline ? `${header}\n${block}` : `${header} The code is attached.`,
        files: inline
          ? []
          : [new AttachmentBuilder(Buffer.from(request.code), { name: `code.${language === 'bash' ? 'sh' : 'py'}` })],
        components: [buttons],
        allowedMentions: { users: [askerId] },
      });
      const pending = this.pending.get(id);
      if (pending) pending.message = message;
    } catch (error) {
      this.settle(id, { action: 'skip', reason: 'the approval could not be posted' });
      throw error;
    }
    return decision;
  }

  private settle(id: string, decision: ApprovalDecision): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    pending.resolve(decision);
    return pending;
  }

  /** Whether the button is one of ours. */
  static owns(customId: string): boolean {
    return customId.startsWith(RUN_PREFIX) || customId.startsWith(SKIP_PREFIX);
  }

  /** Handles a press of Run or Skip. */
  async press(interaction: ButtonInteraction, roles: readonly { id: string; name: string }[]): Promise<void> {
    const run = interaction.customId.startsWith(RUN_PREFIX);
    const id = interaction.customId.slice((run ? RUN_PREFIX : SKIP_PREFIX).length);
    const pending = this.pending.get(id);
    if (!pending) {
      await interaction.reply({ content: 'This approval is over.', flags: MessageFlags.Ephemeral });
      return;
    }
    if (!mayApprove(pending.askerId, interaction.user.id, roles, this.options.approverRoles)) {
      const who = this.options.approverRoles.length
        ? `<@${pending.askerId}> or a member with the role ${this.options.approverRoles.join(' or ')}`
        : `<@${pending.askerId}>, who asked,`;
      await interaction.reply({
        content: `Only ${who} may run or skip this code.`,
        flags: MessageFlags.Ephemeral,
        allowedMentions: { parse: [] },
      });
      return;
    }
    this.settle(id, run ? { action: 'run' } : { action: 'skip' });
    const verdict = run ? `▶️ Run by <@${interaction.user.id}>.` : `⏭ Skipped by <@${interaction.user.id}>.`;
    await interaction.update({
      content: `${interaction.message.content}\n${verdict}`.slice(0, DISCORD_MESSAGE_LIMIT),
      components: [],
      allowedMentions: { parse: [] },
    });
  }

  /** Skips every pending approval (at shutdown, or when a conversation closes). */
  skipAll(): void {
    for (const id of [...this.pending.keys()]) this.settle(id, { action: 'skip', reason: 'the bot is stopping' });
  }
}

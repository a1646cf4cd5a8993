/**
 * One conversation: a thread or DM channel with its own DataChat (its own
 * sandbox and history). Questions are answered one at a time, in order; the
 * files attached to a question go into /mnt/data first. The answer streams
 * into the channel, then its charts and files follow as attachments.
 */
import type { Message, SendableChannels } from 'discord.js';
import type { AgentEvent, ApprovalDecision, ApprovalRequest, DataChat } from '../agents/index.js';
import { AbortError } from '../errors.js';
import { AnswerView } from './answer-view.js';
import type { ApprovalDesk } from './approval-desk.js';
import {
  type AttachmentLimits,
  AttachmentRefusedError,
  attachmentFileName,
  checkAttachment,
  downloadAttachment,
} from './attachment-limits.js';
import type { PooledConversation } from './conversation-pool.js';
import { type ErrorLog, failureReply } from './failure-reply.js';
import { LiveReply } from './live-reply.js';
import { type PublishFile, type ReplyFileLimits, replyFiles } from './reply-files.js';
import { TypingIndicator } from './typing-indicator.js';

export interface ConversationSettings {
  /** Opens the data chat (and its session) with these hooks. */
  openChat: (hooks: {
    onEvent: (event: AgentEvent) => void;
    approve?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  }) => Promise<DataChat>;
  attachmentLimits: AttachmentLimits;
  replyFileLimits: ReplyFileLimits;
  /** With --store: files too big to attach are published there and linked. */
  publishFile?: PublishFile;
  /** Set with --approve. */
  approvals?: ApprovalDesk;
  /** Never posted (the bot's token, the model's key). */
  secrets: readonly string[];
  log: ErrorLog;
}

export interface Question {
  /** The message that asked. */
  message: Message;
  /** Its words, without the mention of the bot. */
  text: string;
}

interface Turn {
  askerId: string;
  view: AnswerView;
  changed: () => void;
  typing: TypingIndicator;
}

export class DiscordConversation implements PooledConversation {
  private queue: Promise<void> = Promise.resolve();
  private waiting = 0;
  private chat: Promise<DataChat> | undefined;
  private usedBytes = 0;
  private turn: Turn | undefined;
  private readonly stop = new AbortController();

  constructor(
    readonly channel: SendableChannels,
    private readonly settings: ConversationSettings,
  ) {}

  private readonly logError = (error: unknown): void =>
    this.settings.log(`sandcell discord: ${error instanceof Error ? error.message : String(error)}`);

  get busy(): boolean {
    return this.waiting > 0;
  }

  /** Answers `question` after the questions before it. */
  ask(question: Question): Promise<void> {
    this.waiting += 1;
    const answered = this.queue
      .then(() => this.answer(question))
      .finally(() => {
        this.waiting -= 1;
      });
    this.queue = answered.catch(() => {});
    return answered;
  }

  private openChat(): Promise<DataChat> {
    if (!this.chat) {
      const approvals = this.settings.approvals;
      this.chat = this.settings.openChat({
        onEvent: (event) => {
          const turn = this.turn;
          if (!turn) return;
          if (event.type === 'execution-start') turn.typing.start();
          if (event.type === 'execution-end' || event.type === 'execution-skipped') turn.typing.stop();
          turn.view.onEvent(event);
          turn.changed();
        },
        approve: approvals
          ? (request) => approvals.request(this.channel, this.turn?.askerId ?? '', request)
          : undefined,
      });
      // A chat that failed to open (say the sandbox did not start) is tried again on the next question.
      this.chat.catch(() => {
        this.chat = undefined;
      });
    }
    return this.chat;
  }

  private async answer(question: Question): Promise<void> {
    if (this.stop.signal.aborted) return;
    const view = new AnswerView();
    const typing = new TypingIndicator(this.channel);
    let live: LiveReply | undefined;
    this.turn = { askerId: question.message.author.id, view, typing, changed: () => live?.update(view.render()) };
    typing.start();
    try {
      const chat = await this.openChat();
      const added = await this.takeAttachments(chat, question, view);
      if (!question.text) {
        typing.stop();
        const hint = added ? 'Ask me about it.' : 'Ask me a question about your data, or attach a file.';
        await this.channel.send({ content: `${view.render()}\n${hint}`.trim() });
        return;
      }
      live = new LiveReply(this.channel, question.message, this.logError);
      await live.start();
      live.update(view.render());
      const answer = await chat.ask(question.text, { signal: this.stop.signal });
      typing.stop();
      view.finish(answer);
      await live.finish(view.render());
      const { files, notes } = await replyFiles(
        chat.session,
        answer.files,
        view.files,
        this.settings.replyFileLimits,
        this.settings.publishFile,
      );
      if (files.length > 0 || notes.length > 0) {
        await this.channel.send({ ...(notes.length ? { content: notes.join('\n') } : {}), files });
      }
    } catch (error) {
      typing.stop();
      if (error instanceof AbortError && this.stop.signal.aborted) return;
      const failure = failureReply(error, this.settings.secrets, this.settings.log);
      const text = `${view.render()}\n${failure}`.trim();
      if (live) await live.finish(text).catch(this.logError);
      else await this.channel.send({ content: failure }).catch(this.logError);
    } finally {
      typing.stop();
      this.turn = undefined;
    }
  }

  /** Uploads the question's attachments into /mnt/data; a refused one is noted in the view. Returns how many were added. */
  private async takeAttachments(chat: DataChat, question: Question, view: AnswerView): Promise<number> {
    let added = 0;
    for (const attachment of question.message.attachments.values()) {
      const name = attachmentFileName(attachment.name);
      try {
        const limits = this.settings.attachmentLimits;
        checkAttachment(name, attachment.size, this.usedBytes, limits);
        const room = Math.min(limits.fileBytes, limits.conversationBytes - this.usedBytes);
        const bytes = await downloadAttachment(attachment.url, name, room, { signal: this.stop.signal });
        const loaded = await chat.addFile(name, bytes);
        this.usedBytes += bytes.length;
        added += 1;
        const shape =
          loaded.rows !== undefined && loaded.columns
            ? `: ${loaded.rows} rows × ${loaded.columns.length} columns (${loaded.columns
                .slice(0, 8)
                .map((column) => column.name)
                .join(', ')}${loaded.columns.length > 8 ? ', …' : ''})`
            : '';
        view.note(`📎 Added \`${name}\` to /mnt/data${shape}.`);
      } catch (error) {
        if (!(error instanceof AttachmentRefusedError)) throw error;
        view.note(`📎 ${error.message}`);
      }
    }
    return added;
  }

  /** Stops the running question, skips pending approvals and closes the sandbox. */
  async close(): Promise<void> {
    this.stop.abort();
    const chat = this.chat;
    this.chat = undefined;
    await this.queue;
    if (chat) await (await chat.catch(() => undefined))?.close();
  }
}

/**
 * The bot's reply to one question, streamed: the answer's text is cut into
 * messages of Discord's size, and each message is sent once and then edited
 * as the text grows (through the EditThrottle, ≤ 1 update a second). An
 * answer longer than a few messages ends with the whole of it attached.
 */
import { AttachmentBuilder, type Message, type MessageCreateOptions, type SendableChannels } from 'discord.js';
import { EditThrottle } from './edit-throttle.js';
import { splitMessage } from './message-split.js';

/** Messages one answer takes at most; the rest goes in an attached answer.md. */
export const MAX_ANSWER_MESSAGES = 5;
const WORKING = '⏳ Working on it…';

export class LiveReply {
  private readonly sent: { message: Message; content: string }[] = [];
  private text = '';
  private readonly throttle: EditThrottle;

  constructor(
    private readonly channel: SendableChannels,
    /** The question being answered: the first message replies to it when in the same channel. */
    private readonly replyTo: Message | undefined,
    onError: (error: unknown) => void,
  ) {
    this.throttle = new EditThrottle(() => this.apply(), 1000, onError);
  }

  /** Shows that work started. */
  async start(): Promise<void> {
    this.text = WORKING;
    await this.apply();
  }

  update(text: string): void {
    this.text = text.trim() === '' ? WORKING : text;
    this.throttle.request();
  }

  /** Shows the final text now. */
  async finish(text: string): Promise<void> {
    this.text = text.trim() === '' ? '_(no answer)_' : text;
    await this.throttle.flush();
    const { overflow } = this.pieces();
    if (overflow)
      await this.channel.send({ files: [new AttachmentBuilder(Buffer.from(overflow), { name: 'answer.md' })] });
  }

  private pieces(): { pieces: string[]; overflow?: string } {
    const pieces = splitMessage(this.text);
    if (pieces.length <= MAX_ANSWER_MESSAGES) return { pieces };
    const kept = pieces.slice(0, MAX_ANSWER_MESSAGES);
    kept[MAX_ANSWER_MESSAGES - 1] = '_(The answer goes on: all of it is in answer.md.)_';
    return { pieces: kept, overflow: this.text };
  }

  private async apply(): Promise<void> {
    const { pieces } = this.pieces();
    for (const [index, content] of pieces.entries()) {
      const existing = this.sent[index];
      if (existing) {
        if (existing.content === content) continue;
        await existing.message.edit({ content });
        existing.content = content;
        continue;
      }
      const options: MessageCreateOptions = { content };
      const message =
        index === 0 && this.replyTo && this.replyTo.channelId === this.channel.id
          ? await this.replyTo.reply({ ...options, allowedMentions: { parse: [], repliedUser: false } })
          : await this.channel.send(options);
      this.sent.push({ message, content });
    }
  }
}

/**
 * "Bot is typing…" while code runs. Discord shows it for about ten seconds
 * per call, so it is renewed until stopped.
 */
import type { SendableChannels } from 'discord.js';

const RENEW_MS = 8000;

export class TypingIndicator {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly channel: SendableChannels) {}

  start(): void {
    if (this.timer) return;
    const send = () => void this.channel.sendTyping().catch(() => {});
    send();
    this.timer = setInterval(send, RENEW_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

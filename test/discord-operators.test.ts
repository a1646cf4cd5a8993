/**
 * `sandcell discord` as an operator sets it up: only members with a role are
 * answered (others silently ignored), a person over the per-minute limit is
 * told once when to ask again, and an idle conversation's sandbox closes with
 * a note in its thread. The built CLI against the fake Discord, bubblewrap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from './support/fake-discord/index.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { type RunningBot, readableText, startSandcellDiscord } from './support/sandcell-discord.js';

const CONVERSATION_MS = 180_000;

describe('sandcell discord --allow-role --questions-per-minute --idle-timeout', () => {
  let discord: FakeDiscord;
  let provider: FakeProvider;
  let bot: RunningBot;

  beforeAll(async () => {
    discord = await startFakeDiscord({ interactionDeadlineMs: 15_000 });
    provider = await startFakeOpenAI([]);
    bot = await startSandcellDiscord(discord, provider, [
      '--allow-role',
      discord.roles.analysts.name,
      '--questions-per-minute',
      '1',
      // Three seconds, so the test sees a conversation close without waiting half an hour.
      '--idle-timeout',
      '0.05',
    ]);
  }, CONVERSATION_MS);

  afterAll(async () => {
    await bot?.stop();
    await provider?.close();
    await discord?.close();
  }, CONVERSATION_MS);

  it(
    'ignores someone without the role, tells a person over the limit once, and closes an idle conversation',
    async () => {
      provider.enqueue({ text: 'Hello, analyst.' });
      const ignored = discord.userSays({
        author: discord.users.bob,
        channelId: discord.channel.id,
        content: 'Can I ask too?',
        mentionBot: true,
      });
      const asked = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'Hello?',
        mentionBot: true,
      });
      const thread = await discord.waitFor(
        () => discord.threadsOf(discord.channel.id).find((candidate) => candidate.id === asked.id),
        { timeoutMs: CONVERSATION_MS },
      );
      await discord.waitFor(() => readableText(discord.messagesIn(thread.id)).includes('Hello, analyst.'), {
        timeoutMs: CONVERSATION_MS,
      });

      discord.userSays({ author: discord.users.alice, channelId: thread.id, content: 'And again?' });
      discord.userSays({ author: discord.users.alice, channelId: thread.id, content: 'And once more?' });
      const told = await discord.waitFor(
        () => {
          const found = discord.messagesIn(thread.id).filter((message) => /ask again in \d+ s/.test(message.content));
          return found.length > 0 ? found : undefined;
        },
        { timeoutMs: CONVERSATION_MS },
      );
      await discord.waitFor(() => readableText(discord.messagesIn(thread.id)).includes('sandbox is closed'), {
        timeoutMs: CONVERSATION_MS,
      });

      // Bob's question got neither a thread nor a reply; the limit was said once; the model was asked once.
      expect(discord.threadsOf(discord.channel.id).map((candidate) => candidate.id)).not.toContain(ignored.id);
      expect(discord.messagesIn(discord.channel.id).filter((message) => message.replyTo === ignored.id)).toEqual([]);
      expect(told).toHaveLength(1);
      expect(discord.messagesIn(thread.id).filter((message) => /ask again in/.test(message.content))).toHaveLength(1);
      expect(provider.requests).toHaveLength(1);
      expect(discord.unknownRequests).toEqual([]);
    },
    CONVERSATION_MS,
  );
});

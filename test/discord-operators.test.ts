/**
 * `sandcell discord` as an operator sets it up: only members with a role are
 * answered (others silently ignored), a person over the per-minute limit is
 * told once when to ask again, and an idle conversation's sandbox closes with
 * a note in its thread. The built CLI against the fake Discord, bubblewrap.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from './support/fake-discord/index.js';
import { startProcessGroup } from './support/process.js';
import { root } from './support/readme.js';
import { CONVERSATION_MS, readableText, withSandcellDiscord } from './support/sandcell-discord.js';

describe('sandcell discord --allow-role --questions-per-minute --idle-timeout', () => {
  const setup = withSandcellDiscord((discord) => [
    '--allow-role',
    discord.roles.analysts.name,
    '--questions-per-minute',
    '1',
    // Three seconds, so the test sees a conversation close without waiting half an hour.
    '--idle-timeout',
    '3s',
  ]);

  it(
    'ignores someone without the role, tells a person over the limit once, and closes an idle conversation',
    async () => {
      const { discord, provider } = setup;
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

describe('sandcell discord --approve --approver-role --approval-timeout', () => {
  const setup = withSandcellDiscord((discord) => [
    '--approve',
    '--approver-role',
    discord.roles.operators.name,
    '--approval-timeout',
    '2',
  ]);
  const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });

  const promptIn = (channelIds: string[], after = 0) =>
    setup.discord.waitFor(
      () =>
        channelIds
          .flatMap((id) => setup.discord.messagesIn(id))
          .filter((message) => JSON.stringify(message.components).includes('"sandcell-run:'))
          .at(after),
      { timeoutMs: CONVERSATION_MS },
    );

  it(
    'lets a member with the approver role press Run on code someone else asked for',
    async () => {
      const { discord, provider } = setup;
      provider.enqueue({ toolCalls: [run('print("approved", 2 + 3)')] }, { text: 'Five.' });
      const question = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'Add 2 and 3 in Python.',
        mentionBot: true,
      });
      const prompt = await promptIn([discord.channel.id, question.id]);
      const runId = /"(sandcell-run:[^"]+)"/.exec(JSON.stringify(prompt.components))![1]!;
      const accepted = await discord.clickButton({ user: discord.users.carol, message: prompt, customId: runId });
      expect([5, 6, 7]).toContain(accepted.type);
      await discord.waitFor(() => readableText(discord.messagesIn(prompt.channelId)).includes('Five.'), {
        timeoutMs: CONVERSATION_MS,
      });
      expect(provider.requests.some((request) => request.raw.includes('approved 5'))).toBe(true);
    },
    CONVERSATION_MS,
  );

  it(
    'skips code nobody approves in time, and the model is told',
    async () => {
      const { discord, provider } = setup;
      const before = provider.requests.length;
      provider.enqueue({ toolCalls: [run('print("never", 6 * 7)')] }, { text: 'Nobody let me run it.' });
      const question = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'Multiply 6 and 7 in Python.',
        mentionBot: true,
      });
      await discord.waitFor(() => readableText(discord.messagesIn(question.id)).includes('Nobody let me run it.'), {
        timeoutMs: CONVERSATION_MS,
      });
      // The prompt says it was skipped, and its buttons are gone.
      const prompt = await discord.waitFor(
        () =>
          discord
            .messagesIn(question.id)
            .find(
              (message) => message.content.includes('Skipped: no answer in time') && message.components.length === 0,
            ),
        { timeoutMs: CONVERSATION_MS },
      );
      expect(prompt.versions.some((version) => JSON.stringify(version).includes('sandcell-run:'))).toBe(true);
      const after = provider.requests.slice(before);
      expect(after.some((request) => request.raw.includes('never 42'))).toBe(false);
      expect(after.some((request) => /declined|not run|skipped/i.test(request.raw))).toBe(true);
    },
    CONVERSATION_MS,
  );
});

describe('sandcell discord login failures', () => {
  async function runBot(discord: FakeDiscord, token: string) {
    const bot = startProcessGroup(
      process.execPath,
      [
        path.join(root, 'bin', 'sandcell.js'),
        'discord',
        '--base-url',
        'http://127.0.0.1:9/v1',
        '--model',
        'local-model',
      ],
      { env: { DISCORD_BOT_TOKEN: token, DISCORD_API_URL: discord.apiUrl, OPENAI_API_KEY: 'test-key' } },
    );
    const exited = await bot.exited;
    return { ...exited, output: `${bot.output.stdout}${bot.output.stderr}` };
  }

  it(
    'says what to fix when Discord refuses the token or the Message Content intent, and exits 2',
    async () => {
      const discord = await startFakeDiscord({ allowedPrivilegedIntents: 0 });
      try {
        const refusedToken = await runBot(discord, 'not-the-token');
        expect(refusedToken.code, refusedToken.output).toBe(2);
        expect(refusedToken.output).toContain('Discord refused the token in DISCORD_BOT_TOKEN');
        expect(refusedToken.output).not.toContain('not-the-token');
        const refusedIntent = await runBot(discord, discord.token);
        expect(refusedIntent.code, refusedIntent.output).toBe(2);
        expect(refusedIntent.output).toContain('Message Content');
        expect(refusedIntent.output).not.toContain(discord.token);
      } finally {
        await discord.close();
      }
    },
    CONVERSATION_MS,
  );
});

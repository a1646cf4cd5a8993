/**
 * `sandcell discord` end to end: the built CLI, logged in with the real discord.js client to the
 * fake Discord of test/support/fake-discord, the model played by the fake OpenAI provider, code run
 * in real bubblewrap sandboxes. Each test is a conversation people would have in a channel.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { type FakeDiscord, Permission, startFakeDiscord } from './support/fake-discord/index.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { type Azurite, startAzurite } from './support/object-store-emulators.js';
import {
  CONVERSATION_MS,
  INTERACTION_DEADLINE_MS,
  type RunningBot,
  readableText,
  startSandcellDiscord,
  withSandcellDiscord,
} from './support/sandcell-discord.js';

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });
const salesCsv = 'month,sales\n2024-01,3\n2024-02,5\n2024-03,9\n';

function modelSaw(provider: FakeProvider, text: string): boolean {
  return provider.requests.some((request) => request.raw.includes(text));
}

describe('sandcell discord', () => {
  const setup = withSandcellDiscord(() => ['--max-attachment', '64K']);
  let firstThreadId: string;

  it(
    'answers a question about an attached CSV with a chart attached, in a thread on the question',
    async () => {
      const { discord, provider } = setup;
      provider.enqueue(
        {
          toolCalls: [
            run(
              'import pandas as pd, matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n' +
                'df = pd.read_csv("/mnt/data/sales.csv")\ndf.plot(x="month", y="sales")\n' +
                'plt.savefig("/mnt/data/sales-by-month.png")\nprint("peak", df.loc[df.sales.idxmax(), "month"])',
            ),
          ],
        },
        { text: 'Sales peaked in 2024-03; the chart is attached.' },
      );
      const question = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'When did sales peak? Plot them.',
        mentionBot: true,
        attachments: [{ name: 'sales.csv', bytes: salesCsv, contentType: 'text/csv' }],
      });
      const thread = await discord.waitFor(
        () => discord.threadsOf(discord.channel.id).find((t) => t.id === question.id),
        {
          timeoutMs: CONVERSATION_MS,
        },
      );
      firstThreadId = thread.id;
      const chart = await discord.waitFor(
        () =>
          discord
            .messagesIn(thread.id)
            .flatMap((message) => message.attachments)
            .find((file) => file.filename.endsWith('.png')),
        { timeoutMs: CONVERSATION_MS },
      );
      expect(chart.bytes.subarray(0, 4)).toEqual(PNG_MAGIC);
      await discord.waitFor(() => readableText(discord.messagesIn(thread.id)).includes('Sales peaked in 2024-03'), {
        timeoutMs: CONVERSATION_MS,
      });
      // The file reached the sandbox (the code's output came back to the model) and the model saw its preview.
      expect(modelSaw(provider, 'peak 2024-03')).toBe(true);
      expect(modelSaw(provider, 'sales.csv')).toBe(true);
      expect(discord.typingIn(thread.id) + discord.typingIn(discord.channel.id)).toBeGreaterThan(0);
      expect(readableText(discord.messagesIn(thread.id))).not.toContain(discord.token);
      expect(discord.unknownRequests).toEqual([]);
    },
    CONVERSATION_MS,
  );

  it(
    'keeps the state for a follow-up in the thread, without a mention',
    async () => {
      const { discord, provider } = setup;
      const requestsBefore = provider.requests.length;
      provider.enqueue(
        { toolCalls: [run('print(f"rows={len(df)} total={df.sales.sum()}")')] },
        { text: 'Three months, 17 sales in all.' },
      );
      discord.userSays({
        author: discord.users.alice,
        channelId: firstThreadId,
        content: 'How many rows, and the total?',
      });
      await discord.waitFor(
        () => readableText(discord.messagesIn(firstThreadId)).includes('Three months, 17 sales in all.'),
        {
          timeoutMs: CONVERSATION_MS,
        },
      );
      // `df` from the first question was still defined: the same sandbox, the same conversation.
      const followUpRequests = provider.requests.slice(requestsBefore);
      expect(followUpRequests.some((request) => request.raw.includes('rows=3 total=17'))).toBe(true);
      expect(followUpRequests.some((request) => request.raw.includes('When did sales peak?'))).toBe(true);
    },
    CONVERSATION_MS,
  );

  it(
    'reports a model failure in the channel and keeps answering',
    async () => {
      const { discord, provider, bot } = setup;
      provider.enqueue({ status: 400, message: 'upstream model exploded' });
      const question = discord.userSays({
        author: discord.users.bob,
        channelId: discord.channel.id,
        content: 'What is 6 times 7?',
        mentionBot: true,
      });
      const failure = await discord.waitFor(
        () => {
          const text = readableText([...discord.messagesIn(question.id), ...discord.messagesIn(discord.channel.id)]);
          return text.includes('The model provider failed') ? text : undefined;
        },
        { timeoutMs: CONVERSATION_MS },
      );
      expect(failure).not.toMatch(/Traceback|\n\s+at |\/work\/|node_modules/);
      expect(bot.process.child.exitCode).toBeNull();

      provider.enqueue({ text: 'Back again: 42.' });
      discord.userSays({
        author: discord.users.bob,
        channelId: discord.channel.id,
        content: 'Try again?',
        mentionBot: true,
      });
      await discord.waitFor(
        () =>
          [discord.channel.id, ...discord.threadsOf(discord.channel.id).map((thread) => thread.id)].some((id) =>
            readableText(discord.messagesIn(id)).includes('Back again: 42.'),
          ),
        { timeoutMs: CONVERSATION_MS },
      );
    },
    CONVERSATION_MS,
  );

  it(
    'resumes after a gateway disconnect and answers what was said meanwhile',
    async () => {
      const { discord, provider } = setup;
      await discord.dropGateway();
      provider.enqueue({ text: 'Still here after the reconnect.' });
      discord.userSays({ author: discord.users.alice, channelId: firstThreadId, content: 'Are you still there?' });
      await discord.waitFor(
        () => readableText(discord.messagesIn(firstThreadId)).includes('Still here after the reconnect.'),
        {
          timeoutMs: CONVERSATION_MS,
        },
      );
      expect(discord.gatewayStats()).toMatchObject({ identifies: 1, resumes: 1, connected: true });
    },
    CONVERSATION_MS,
  );

  it(
    'refuses an oversized attachment politely, naming the file and the limit',
    async () => {
      const { discord, provider } = setup;
      const dm = discord.directMessageChannel(discord.users.bob);
      // The question is still asked, without the file: its answer ends the conversation's turn, so that no
      // request of this test's is left to take the next test's scripted answer.
      provider.enqueue({ text: 'There is no file I could read; big.csv was too large.' });
      discord.userSays({
        author: discord.users.bob,
        channelId: dm.id,
        content: 'Summarise this file',
        attachments: [{ name: 'big.csv', bytes: `a,b\n${'1,2\n'.repeat(50_000)}`, contentType: 'text/csv' }],
      });
      const refusal = await discord.waitFor(
        () => {
          const text = readableText(discord.messagesIn(dm.id));
          return text.includes('big.csv was too large') ? text : undefined;
        },
        { timeoutMs: CONVERSATION_MS },
      );
      expect(refusal).toContain('64 KiB');
      expect(refusal).not.toMatch(/Traceback|\n\s+at |\/work\//);
      // The model was asked (the canary) and never saw the file's contents.
      expect(modelSaw(provider, 'Summarise this file')).toBe(true);
      expect(modelSaw(provider, '1,2\\n1,2\\n1,2')).toBe(false);
    },
    CONVERSATION_MS,
  );

  it(
    'answers in the channel itself where it may not make threads, without trying one',
    async () => {
      const { discord, provider, bot } = setup;
      const channel = discord.randomChannel;
      // The server's @everyone may not create public threads in #random; everything else as before.
      discord.setPermissionOverwrite(channel.id, {
        id: discord.guild.id,
        type: 0,
        allow: 0n,
        deny: Permission.createPublicThreads,
      });
      provider.enqueue({ text: 'Answered right here, in the channel.' });
      discord.userSays({
        author: discord.users.alice,
        channelId: channel.id,
        content: 'Can you answer without a thread?',
        mentionBot: true,
      });
      await discord.waitFor(
        () => readableText(discord.messagesIn(channel.id)).includes('Answered right here, in the channel.'),
        { timeoutMs: CONVERSATION_MS },
      );
      expect(discord.threadsOf(channel.id)).toEqual([]);
      // No thread was asked for (Discord would have refused it with 403 Missing Permissions).
      const threadRequests = discord.requests.filter((request) => request.endsWith('/threads'));
      expect(threadRequests.filter((request) => request.includes(channel.id))).toEqual([]);
      expect(bot.process.output.stderr).not.toMatch(/Missing Permissions|\n\s+at /);
    },
    CONVERSATION_MS,
  );
});

/** The bubblewrap volumes a process holds: one per open sandbox, named after its pid. */
async function sandboxVolumesOf(pid: number): Promise<string[]> {
  const sessions = (await createBubblewrapBackend().report()).runtime.sessionsDirectory;
  return existsSync(sessions) ? readdirSync(sessions).filter((name) => name.startsWith(`${pid}-`)) : [];
}

/** discord.js waits this long for the close handshake of a logout before it gives up on it (ws's closeTimeout). */
const WEBSOCKET_CLOSE_TIMEOUT_MS = 30_000;

describe('sandcell discord stopped while Discord is unreachable', () => {
  it(
    'closes its sandboxes on SIGTERM and exits without waiting for Discord',
    async () => {
      const discord = await startFakeDiscord({ interactionDeadlineMs: INTERACTION_DEADLINE_MS });
      const provider = await startFakeOpenAI([]);
      const bot = await startSandcellDiscord(discord, provider);
      try {
        provider.enqueue({ toolCalls: [run('print("sandbox", 6 * 7)')] }, { text: 'The sandbox says 42.' });
        const dm = discord.directMessageChannel(discord.users.bob);
        discord.userSays({ author: discord.users.bob, channelId: dm.id, content: 'What is 6 times 7, in Python?' });
        await discord.waitFor(() => readableText(discord.messagesIn(dm.id)).includes('The sandbox says 42.'), {
          timeoutMs: CONVERSATION_MS,
        });
        const pid = bot.process.child.pid as number;
        expect(await sandboxVolumesOf(pid)).not.toEqual([]);

        discord.stopAnswering();
        process.kill(pid, 'SIGTERM');
        // Before, the logout waited on the close handshake (and retried requests) for a minute or more.
        const exited = await Promise.race([
          bot.process.exited,
          new Promise<'still running'>((resolve) =>
            setTimeout(() => resolve('still running'), WEBSOCKET_CLOSE_TIMEOUT_MS),
          ),
        ]);
        expect(exited, bot.process.output.stderr).toEqual({ code: 0, signal: null });
        expect(await sandboxVolumesOf(pid)).toEqual([]);
        expect(bot.process.output.stderr).toContain('Discord did not answer the logout');
      } finally {
        await bot.stop();
        await provider.close();
        await discord.close();
      }
    },
    CONVERSATION_MS,
  );
});

describe('sandcell discord --approve', () => {
  const setup = withSandcellDiscord(() => ['--approve', '--approver-role', 'operators']);

  it(
    'runs the code only when the asker presses Run; someone else is refused',
    async () => {
      const { discord, provider } = setup;
      provider.enqueue({ toolCalls: [run('print("answer", 6 * 7)')] }, { text: 'It is 42.' });
      const question = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'Compute 6 times 7 with Python.',
        mentionBot: true,
      });
      const hasRunButton = (components: unknown[]) => JSON.stringify(components).includes('"sandcell-run:');
      const prompt = await discord.waitFor(
        () =>
          [discord.channel.id, question.id]
            .flatMap((id) => discord.messagesIn(id))
            .find((message) => hasRunButton(message.components)),
        { timeoutMs: CONVERSATION_MS },
      );
      expect(prompt.content + JSON.stringify(prompt.embeds)).toContain('6 * 7');
      const runId = /"(sandcell-run:[^"]+)"/.exec(JSON.stringify(prompt.components))![1]!;

      const refused = await discord.clickButton({ user: discord.users.bob, message: prompt, customId: runId });
      expect(refused.type).toBe(4);
      const refusal = discord.messagesIn(prompt.channelId).find((message) => message.id === refused.messageId)!;
      expect(refusal.ephemeral).toBe(true);
      expect(refusal.content).toMatch(/only/i);
      expect(modelSaw(provider, 'answer 42')).toBe(false);

      const accepted = await discord.clickButton({ user: discord.users.alice, message: prompt, customId: runId });
      expect([5, 6, 7]).toContain(accepted.type);
      await discord.waitFor(() => readableText(discord.messagesIn(prompt.channelId)).includes('It is 42.'), {
        timeoutMs: CONVERSATION_MS,
      });
      expect(modelSaw(provider, 'answer 42')).toBe(true);
      expect(discord.unknownRequests).toEqual([]);
    },
    CONVERSATION_MS,
  );

  it(
    'lets a member of the approver role skip the code for the asker',
    async () => {
      const { discord, provider } = setup;
      provider.enqueue({ toolCalls: [run('print("never", 40 + 2)')] }, { text: 'Not run, as the operator chose.' });
      const question = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'Add 40 and 2 with Python.',
        mentionBot: true,
      });
      const skipPattern = /"(sandcell-skip:[^"]+)"/;
      const prompt = await discord.waitFor(
        () => discord.messagesIn(question.id).find((message) => skipPattern.test(JSON.stringify(message.components))),
        { timeoutMs: CONVERSATION_MS },
      );
      const skipId = skipPattern.exec(JSON.stringify(prompt.components))![1]!;
      const answer = await discord.clickButton({ user: discord.users.carol, message: prompt, customId: skipId });
      expect([5, 6, 7]).toContain(answer.type);
      await discord.waitFor(
        () => readableText(discord.messagesIn(question.id)).includes('Not run, as the operator chose.'),
        {
          timeoutMs: CONVERSATION_MS,
        },
      );
      expect(modelSaw(provider, 'never 42')).toBe(false);
      expect(discord.messagesIn(question.id).some((message) => message.ephemeral)).toBe(false);
    },
    CONVERSATION_MS,
  );
});

describe('sandcell discord --store (Azure Blob on Azurite)', () => {
  let azurite: Azurite;
  let discord: FakeDiscord;
  let provider: FakeProvider;
  let bot: RunningBot;
  beforeAll(async () => {
    azurite = await startAzurite(['sandcell']);
    discord = await startFakeDiscord({ interactionDeadlineMs: INTERACTION_DEADLINE_MS });
    provider = await startFakeOpenAI([]);
    bot = await startSandcellDiscord(discord, provider, ['--store', 'azure://devstoreaccount1/sandcell/discord'], {
      AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString,
    });
  }, CONVERSATION_MS);
  afterAll(async () => {
    await bot?.stop();
    await discord?.close();
    await provider?.close();
    azurite?.stop();
  });

  it(
    'a file too big to attach is published to the store and linked; the link downloads it without a key',
    async () => {
      provider.enqueue(
        {
          toolCalls: [
            run(
              'import os, hashlib\ndata = os.urandom(12 << 20)\nopen("/mnt/data/big.bin", "wb").write(data)\n' +
                'print("sha", hashlib.sha256(data).hexdigest())',
            ),
          ],
        },
        { text: 'The file is ready.' },
      );
      const question = discord.userSays({
        author: discord.users.alice,
        channelId: discord.channel.id,
        content: 'Make me a 12 MB file.',
        mentionBot: true,
      });
      const thread = await discord.waitFor(
        () => discord.threadsOf(discord.channel.id).find((t) => t.id === question.id),
        { timeoutMs: CONVERSATION_MS },
      );
      const note = await discord.waitFor(
        () =>
          /big\.bin \(12 MiB\): (http\S+) \(the link works until /.exec(readableText(discord.messagesIn(thread.id))),
        { timeoutMs: CONVERSATION_MS },
      );
      const sha = /sha ([0-9a-f]{64})/.exec(provider.requests.map((request) => request.raw).join('\n'))?.[1];
      expect(sha).toBeDefined();
      const link = await fetch(note[1] as string);
      expect(link.status).toBe(200);
      expect(
        createHash('sha256')
          .update(Buffer.from(await link.arrayBuffer()))
          .digest('hex'),
      ).toBe(sha);
      expect(discord.messagesIn(thread.id).flatMap((message) => message.attachments)).toEqual([]);
    },
    CONVERSATION_MS,
  );
});

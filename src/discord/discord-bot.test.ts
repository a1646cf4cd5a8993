/**
 * The Discord bot's own logic, in process: the real discord.js client logged in
 * to the fake Discord of test/support/fake-discord, the model a
 * ScriptedChatModel, the sandbox the scripted backend. A question gets a thread
 * and the model's answer, the model is sent the question and what its code
 * printed, a follow-up in the thread continues the same conversation, and a
 * failing model is said plainly. `sandcell discord` end to end, with the HTTP
 * providers and real sandboxes, is test/discord.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeDiscord, startFakeDiscord } from '../../test/support/fake-discord/index.js';
import { byCode, printed } from '../../test/support/kernel-script.js';
import { readableText } from '../../test/support/sandcell-discord.js';
import { DataChat } from '../agents/data-chat.js';
import { ModelResponseError } from '../agents/index.js';
import { ScriptedChatModel } from '../agents/scripted-chat-model.js';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { createSession } from '../session/session.js';
import { DiscordBot } from './discord-bot.js';
import { DEFAULT_REPLY_FILE_LIMITS } from './reply-files.js';

const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });
const ANSWER_MS = 20_000;

let discord: FakeDiscord;
let bot: DiscordBot;
const model = new ScriptedChatModel();
const logged: string[] = [];
const backend = createScriptedBackend({
  execute: byCode({
    'print(6 * 7)': [printed('42\n')],
    'print(len("sandcell"))': [printed('8\n')],
  }),
});

beforeAll(async () => {
  discord = await startFakeDiscord({ log: () => {} });
  bot = new DiscordBot({
    token: discord.token,
    apiUrl: discord.apiUrl,
    rules: { guilds: [], channels: [], roles: [] },
    questionsPerMinute: 0,
    idleTimeoutMs: 600_000,
    maxConversations: 4,
    attachmentLimits: { fileBytes: 64 * 1024, conversationBytes: 1024 * 1024 },
    replyFileLimits: DEFAULT_REPLY_FILE_LIMITS,
    openChat: async (hooks) =>
      DataChat.create({
        model,
        session: await createSession({ backend, preloadModules: [] }),
        ownSession: true,
        onEvent: hooks.onEvent,
      }),
    secrets: [],
    log: (line) => logged.push(line),
  });
  await bot.start();
});

afterAll(async () => {
  await bot?.stop();
  await discord?.close();
});

describe('the Discord bot with a scripted model', () => {
  let threadId: string;

  it('answers a mention in a thread on the question, with what the code printed sent to the model', async () => {
    model.enqueue({ toolCalls: [run('print(6 * 7)')] }, { text: 'Six times seven is 42.' });
    const question = discord.userSays({
      author: discord.users.alice,
      channelId: discord.channel.id,
      content: 'What is six times seven?',
      mentionBot: true,
    });
    const thread = await discord.waitFor(
      () => discord.threadsOf(discord.channel.id).find((candidate) => candidate.id === question.id),
      { timeoutMs: ANSWER_MS },
    );
    threadId = thread.id;
    await discord.waitFor(() => readableText(discord.messagesIn(thread.id)).includes('Six times seven is 42.'), {
      timeoutMs: ANSWER_MS,
    });
    const [asked, afterCode] = model.calls;
    expect(JSON.stringify(asked?.messages)).toContain('What is six times seven?');
    expect(asked?.tools?.map((tool) => tool.name)).toContain('execute_python_code');
    // The tool result the model read is the kernel's output.
    expect(JSON.stringify(afterCode?.messages)).toContain('42');
    expect(model.remaining).toBe(0);
  });

  it('continues the same conversation for a follow-up in the thread, without a mention', async () => {
    const callsBefore = model.calls.length;
    model.enqueue({ toolCalls: [run('print(len("sandcell"))')] }, { text: 'It has 8 letters.' });
    discord.userSays({ author: discord.users.alice, channelId: threadId, content: 'How long is the word sandcell?' });
    await discord.waitFor(() => readableText(discord.messagesIn(threadId)).includes('It has 8 letters.'), {
      timeoutMs: ANSWER_MS,
    });
    const followUp = JSON.stringify(model.calls[callsBefore]?.messages);
    // The history of the first question came along: one conversation, one session.
    expect(followUp).toContain('What is six times seven?');
    expect(followUp).toContain('How long is the word sandcell?');
  });

  it('says plainly that the model provider failed, and keeps serving', async () => {
    model.enqueue(new ModelResponseError('The provider answered 400: context length exceeded.', { status: 400 }));
    discord.userSays({ author: discord.users.alice, channelId: threadId, content: 'And now?' });
    await discord.waitFor(
      () =>
        readableText(discord.messagesIn(threadId)).includes(
          '⚠️ The model provider failed: The provider answered 400: context length exceeded.',
        ),
      { timeoutMs: ANSWER_MS },
    );
    expect(logged.filter((line) => line.includes('error'))).toEqual([]);
  });
});

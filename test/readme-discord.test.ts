/**
 * "Ask in Discord" (README.md, docs/discord.md), run as written: the invite URL's permissions are
 * the ones the bot's code asks for, the `discord-run` block logs in (to the
 * fake Discord, through DISCORD_API_URL, with the token `...` the block
 * exports) and the conversation of `discord-transcript` happens as shown: its
 * questions, code, output, answers and attachments all reach the channel.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOT_PERMISSIONS } from '../src/discord/invite-url.js';
import { type FakeDiscord, startFakeDiscord } from './support/fake-discord/index.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { type GroupLeader, startProcessGroup } from './support/process.js';
import { commandsOf, readmeBlock, scratchClone } from './support/readme.js';
import { readableText } from './support/sandcell-discord.js';

const CONVERSATION_MS = 180_000;
const salesCsv = 'month,sales\n2024-01,3\n2024-02,5\n2024-03,9\n';

/** The transcript's lines: who speaks (alice, sandcell, or undefined for a continued line) and what. */
function transcriptLines(): { speaker?: string; text: string; indented: boolean }[] {
  return readmeBlock('discord-transcript')
    .code.split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      // Ten columns of speaker, then what they said; code and its output are indented four more.
      const speaker = /^(alice|sandcell) /.exec(line)?.[1];
      const body = line.startsWith('  └') ? line.trim() : line.slice(10);
      return { ...(speaker ? { speaker } : {}), text: body.trim(), indented: body.startsWith('    ') };
    });
}

describe('README: Ask in Discord', () => {
  it('the invite URL asks for exactly the permissions the bot needs, and the prose adds them up', () => {
    const url = new URL(readmeBlock('discord-invite').code.trim());
    expect(url.origin + url.pathname).toBe('https://discord.com/oauth2/authorize');
    expect(url.searchParams.get('scope')).toBe('bot');
    expect(url.searchParams.get('permissions')).toBe(String(BOT_PERMISSIONS));
    const named =
      PermissionFlagsBits.ViewChannel +
      PermissionFlagsBits.SendMessages +
      PermissionFlagsBits.AttachFiles +
      PermissionFlagsBits.ReadMessageHistory +
      PermissionFlagsBits.CreatePublicThreads +
      PermissionFlagsBits.SendMessagesInThreads;
    expect(named).toBe(BOT_PERMISSIONS);
  });

  describe('the run block and the transcript', () => {
    let discord: FakeDiscord;
    let provider: FakeProvider;
    let bot: GroupLeader;
    let clone: string;
    let home: string;

    beforeAll(async () => {
      const [exported, command] = commandsOf(readmeBlock('discord-run').code);
      expect(exported).toBe('export DISCORD_BOT_TOKEN=...');
      expect(command).toMatch(/^npx sandcell discord --base-url http:\/\/localhost:11434\/v1 /);
      discord = await startFakeDiscord({ token: '...', interactionDeadlineMs: 15_000 });
      provider = await startFakeOpenAI([]);
      clone = scratchClone();
      home = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-discord-'));
      // The model is the fake provider where the block names Ollama, as the chat-ollama runner does.
      const script = `${exported}\n${command!.replace('http://localhost:11434/v1', provider.baseURL)}`;
      bot = startProcessGroup('bash', ['-c', script], {
        cwd: clone,
        env: { DISCORD_API_URL: discord.apiUrl, OPENAI_API_KEY: '', XDG_CONFIG_HOME: home, SANDCELL_MODEL: '' },
      });
      await bot.printed('sandcell discord: logged in as');
    }, CONVERSATION_MS);

    afterAll(async () => {
      if (bot?.child.exitCode === null && bot.child.signalCode === null) {
        process.kill(-(bot.child.pid as number), 'SIGKILL');
        await bot.exited;
      }
      await provider?.close();
      await discord?.close();
      rmSync(clone, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    }, CONVERSATION_MS);

    it(
      'has the conversation the transcript shows, then stops cleanly on SIGTERM',
      async () => {
        expect(`${bot.output.stdout}${bot.output.stderr}`).toContain(
          `https://discord.com/oauth2/authorize?client_id=${discord.botUser.id}&scope=bot&permissions=${BOT_PERMISSIONS}`,
        );
        const lines = transcriptLines();
        const questions = lines.filter((line) => line.speaker === 'alice');
        const first = questions[0]!.text.match(/^@sandcell (.+?)\s+📎 (\S+)$/)!;
        expect(first[2]).toBe('sales.csv');
        const followUp = questions[1]!.text;
        // The model says what the transcript shows; the code it writes is the transcript's code.
        const codeOf = (from: number, count: number) =>
          lines
            .filter((line) => line.indented)
            .slice(from, from + count)
            .map((line) => line.text)
            .join('\n');
        const answers = lines.filter(
          (line) => !line.indented && line.speaker !== 'alice' && !line.text.startsWith('└'),
        );
        const firstAnswer = answers.find((line) => line.text.startsWith('Sales peaked'))!.text;
        const secondAnswer = answers.at(-1)!.text;
        provider.enqueue(
          {
            toolCalls: [{ name: 'execute_python_code', arguments: { code: codeOf(0, 4) } }],
          },
          { text: firstAnswer },
          { toolCalls: [{ name: 'execute_python_code', arguments: { code: codeOf(5, 1) } }] },
          { text: secondAnswer },
        );

        const question = discord.userSays({
          author: discord.users.alice,
          channelId: discord.channel.id,
          content: first[1]!,
          mentionBot: true,
          attachments: [{ name: 'sales.csv', bytes: salesCsv, contentType: 'text/csv' }],
        });
        const thread = await discord.waitFor(
          () => discord.threadsOf(discord.channel.id).find((candidate) => candidate.id === question.id),
          { timeoutMs: CONVERSATION_MS },
        );
        expect(lines[1]!.text).toBe(`└ thread "${thread.name}"`);
        await discord.waitFor(() => readableText(discord.messagesIn(thread.id)).includes(firstAnswer), {
          timeoutMs: CONVERSATION_MS,
        });
        discord.userSays({ author: discord.users.alice, channelId: thread.id, content: followUp });
        await discord.waitFor(() => readableText(discord.messagesIn(thread.id)).includes(secondAnswer), {
          timeoutMs: CONVERSATION_MS,
        });
        await discord.waitFor(() => discord.messagesIn(thread.id).some((message) => message.attachments.length > 0), {
          timeoutMs: CONVERSATION_MS,
        });
        // Every line the transcript gives the bot is in the thread: its words, code, output and files.
        const seen = readableText(discord.messagesIn(thread.id));
        for (const line of lines.filter(
          (candidate) => candidate.speaker !== 'alice' && !candidate.text.startsWith('└'),
        )) {
          const text = line.text.startsWith('🖼 ') ? line.text.slice(2).trim() : line.text;
          expect(seen, `README transcript line: ${line.text}`).toContain(text);
        }
        const files = discord
          .messagesIn(thread.id)
          .flatMap((message) => message.attachments.map((file) => file.filename));
        const shownFiles = lines.filter((line) => line.text.startsWith('🖼 ')).map((line) => line.text.slice(2).trim());
        expect(files.filter((name) => !/^(code|output)-\d+\./.test(name)).sort()).toEqual(shownFiles.sort());

        process.kill(-(bot.child.pid as number), 'SIGTERM');
        await bot.printed('closing conversations and logging out');
        await discord.waitFor(() => !discord.gatewayStats().connected || undefined, { timeoutMs: CONVERSATION_MS });
      },
      CONVERSATION_MS,
    );
  });
});

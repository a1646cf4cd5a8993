/**
 * `sandcell discord` as a process, pointed at the fake Discord (DISCORD_API_URL → discord.js
 * `rest.api`) and at a fake OpenAI provider, for the whole-conversation tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type FakeDiscord, type MessageView, startFakeDiscord } from './fake-discord/index.js';
import { type FakeProvider, startFakeOpenAI } from './fake-providers.js';
import { type GroupLeader, startProcessGroup } from './process.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const bin = path.join(root, 'bin', 'sandcell.js');

export interface RunningBot {
  process: GroupLeader;
  stop(): Promise<void>;
}

export async function startSandcellDiscord(
  discord: FakeDiscord,
  provider: FakeProvider,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<RunningBot> {
  const home = mkdtempSync(path.join(os.tmpdir(), 'sandcell-discord-'));
  const bot = startProcessGroup(
    process.execPath,
    [bin, 'discord', '--base-url', provider.baseURL, '--model', 'local-model', '--backend', 'bubblewrap', ...extraArgs],
    {
      cwd: home,
      env: {
        DISCORD_BOT_TOKEN: discord.token,
        DISCORD_API_URL: discord.apiUrl,
        OPENAI_API_KEY: 'test-key',
        OPENAI_BASE_URL: '',
        ANTHROPIC_API_KEY: '',
        SANDCELL_PROVIDER: '',
        SANDCELL_MODEL: '',
        XDG_CONFIG_HOME: home,
        ...extraEnv,
      },
    },
  );
  await bot.printed('sandcell discord: logged in as');
  return {
    process: bot,
    async stop() {
      if (bot.child.exitCode === null && bot.child.signalCode === null) {
        process.kill(-(bot.child.pid as number), 'SIGTERM');
        await bot.exited;
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** A click must be answered quickly on Discord (3 s); the fake's margin is for a loaded 2-core test machine. */
export const INTERACTION_DEADLINE_MS = 15_000;
/** Set-up, a whole conversation, tear-down: each may wait for real sandboxes and a model's turns. */
export const CONVERSATION_MS = 180_000;

export interface DiscordBotSetup {
  discord: FakeDiscord;
  provider: FakeProvider;
  bot: RunningBot;
}

/**
 * In the calling `describe`: a fake Discord, a fake OpenAI provider and `sandcell discord` run with
 * `args(discord)` before its tests, all stopped after them. The fields are set once the set-up ran.
 */
export function withSandcellDiscord(args: (discord: FakeDiscord) => string[] = () => []): DiscordBotSetup {
  const setup = {} as DiscordBotSetup;
  beforeAll(async () => {
    setup.discord = await startFakeDiscord({ interactionDeadlineMs: INTERACTION_DEADLINE_MS });
    setup.provider = await startFakeOpenAI([]);
    setup.bot = await startSandcellDiscord(setup.discord, setup.provider, args(setup.discord));
  }, CONVERSATION_MS);
  afterAll(async () => {
    await setup.bot?.stop();
    await setup.provider?.close();
    await setup.discord?.close();
  }, CONVERSATION_MS);
  return setup;
}

const TEXT_FILE = /\.(txt|md|py|log|out)$/i;

/** Everything a person reads in the bot's messages: latest text, embeds, file names and text files (long output goes there). */
export function readableText(messages: MessageView[]): string {
  return messages
    .filter((message) => !message.deleted)
    .flatMap((message) => [
      message.content,
      JSON.stringify(message.embeds),
      ...message.attachments.map((file) =>
        TEXT_FILE.test(file.filename) ? `${file.filename}\n${file.bytes.toString('utf8')}` : file.filename,
      ),
    ])
    .join('\n');
}

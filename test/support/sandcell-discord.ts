/**
 * `sandcell discord` as a process, pointed at the fake Discord (DISCORD_API_URL → discord.js
 * `rest.api`) and at a fake OpenAI provider, for the whole-conversation tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FakeDiscord, MessageView } from './fake-discord/index.js';
import type { FakeProvider } from './fake-providers.js';
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

/** The flags of `sandcell discord`: the model, sandbox and agent flags of `chat`, and who may use the bot and how much. */
import { type Command, Option } from 'commander';
import { type AgentCommandOptions, addModelOptions, KEYS_HELP } from './agent-flags.js';
import { addBackendOptions } from './backend-option.js';
import { addLimitOptions } from './limit-options.js';
import { addNetworkOption } from './network-options.js';
import { UNITS_HELP } from './unit-flags.js';

export interface DiscordCliOptions extends AgentCommandOptions {
  discordApi?: string;
  allowGuild: string[];
  allowChannel: string[];
  allowRole: string[];
  approverRole: string[];
  approvalTimeout: string;
  questionsPerMinute: string;
  idleTimeout: string;
  maxConversations: string;
  maxAttachment: string;
  maxConversationData: string;
  maxReplyFiles: string;
  store?: string;
  linkTtl: string;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, ...value.split(',').map((item) => item.trim())].filter((item) => item !== '');
}

export const DISCORD_HELP =
  '\nThe bot token comes from DISCORD_BOT_TOKEN (never a flag: flags show in `ps`). The bot answers when\nmentioned in a channel (in a thread it starts on the message) and in direct messages; each thread or DM\nis one conversation with its own sandbox. It needs the Message Content intent (see the README).';

/** A flag with a default, shown as the flag takes it: `(default: 30m)`, not `(default: "30m")`. */
function withDefault(flags: string, description: string, value: string): Option {
  return new Option(flags, description).default(value, value);
}

export function addDiscordOptions(command: Command): Command {
  addModelOptions(
    addBackendOptions(command)
      .option('-d, --data <path>', 'a data file or directory every conversation starts with (repeatable)', collect, [])
      .option('--context <file>', 'a text file of context for the model, e.g. what the columns mean'),
  )
    .option('--approve', 'post each piece of code with Run / Skip buttons before it runs')
    .option(
      '--approver-role <role>',
      'a role (name or id) whose members may press Run / Skip for anyone (repeatable)',
      collect,
      [],
    )
    .addOption(withDefault('--approval-timeout <duration>', 'unanswered code is skipped after this long', '5m'))
    .option('-t, --timeout <duration>', 'wall-clock limit of each execution, e.g. 90s or 5m (default: 1m)')
    .option('--max-steps <n>', 'model calls with tools per question before it must answer')
    .option('--max-attempts <n>', 'failed executions in a row before the model must stop and explain')
    .option(
      '--allow-guild <id>',
      'answer only in this server (repeatable); default: every server the bot is in',
      collect,
      [],
    )
    .option('--allow-channel <id>', 'answer only in this channel and its threads (repeatable)', collect, [])
    .option('--allow-role <role>', 'answer only members with this role, by name or id (repeatable)', collect, [])
    .addOption(withDefault('--questions-per-minute <n>', 'questions one person may ask per minute (0: no limit)', '6'))
    .addOption(
      withDefault(
        '--idle-timeout <duration>',
        'a conversation idle this long closes (its sandbox and state go), e.g. 30m or 2h; give the unit',
        '30m',
      ),
    )
    .addOption(
      withDefault(
        '--max-conversations <n>',
        'conversations (sandboxes) open at once; the longest idle closes first',
        '20',
      ),
    )
    .addOption(withDefault('--max-attachment <size>', 'the largest attached file taken; at most --max-upload', '25M'))
    .addOption(
      withDefault('--max-conversation-data <size>', "what one conversation's attachments may add up to", '100M'),
    )
    .addOption(withDefault('--max-reply-files <n>', 'files sent back with one answer at most (Discord takes 10)', '10'))
    .option(
      '--store <location>',
      'publish files too big to attach (or past --max-reply-files) to this S3 or Azure Blob store and link them: s3://BUCKET/PREFIX or azure://ACCOUNT/CONTAINER/PREFIX (env SANDCELL_STORE)',
    )
    .addOption(withDefault('--link-ttl <duration>', 'how long a published file’s link works, at most 7d', '1h'))
    .addOption(
      new Option('--discord-api <url>', "Discord's REST API base, for a stand-in Discord in tests")
        .env('DISCORD_API_URL')
        .hideHelp(),
    )
    .addHelpText('after', `${DISCORD_HELP}${UNITS_HELP}${KEYS_HELP}`);
  return addNetworkOption(addLimitOptions(command));
}

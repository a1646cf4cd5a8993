/** The flags `chat` and `ask` share. Kept apart from the commands so the CLI loads the LLM SDKs only when they run. */
import type { Command } from 'commander';
import { addBackendOptions, type BackendCliOptions } from './backend-option.js';
import { addLimitOptions, type LimitCliOptions } from './limit-options.js';
import { addNetworkOption, type NetworkCliOptions } from './network-options.js';
import { UNITS_HELP } from './unit-flags.js';
import { addVolumeOption, type VolumeCliOptions } from './volume-options.js';

export const DEFAULT_OUTPUT_DIR = 'sandcell-output';

/** The flags that choose a model (chat, ask and serve). */
export interface ModelCliOptions {
  provider?: string;
  model?: string;
  baseUrl?: string;
  reasoningEffort?: string;
  stream?: boolean;
}

export const KEYS_HELP =
  '\nKeys come from the environment: OPENAI_API_KEY, ANTHROPIC_API_KEY, or AZURE_OPENAI_API_KEY with\nAZURE_OPENAI_ENDPOINT and OPENAI_API_VERSION. A local server given by --base-url needs no key.\nDefaults can go in ./sandcell.config.json or ~/.config/sandcell/config.json.';

/** Adds the flags that choose a model. */
export function addModelOptions(command: Command): Command {
  return command
    .option('--provider <name>', 'openai, azure or anthropic (env SANDCELL_PROVIDER)')
    .option('-m, --model <name>', 'the model, or the Azure deployment (env SANDCELL_MODEL)')
    .option('--base-url <url>', 'an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama')
    .option('--reasoning-effort <level>', 'for reasoning models: none, minimal, low, medium, high, xhigh')
    .option('--no-stream', 'do not stream responses (for servers that cannot stream tool calls)');
}

export interface AgentCommandOptions
  extends BackendCliOptions,
    ModelCliOptions,
    LimitCliOptions,
    NetworkCliOptions,
    VolumeCliOptions {
  data: string[];
  context?: string;
  approve?: boolean;
  /** Where files the code writes are saved on the host; not saved when unset (discord sends them instead). */
  outputDir?: string;
  timeout?: string;
  maxSteps?: string;
  maxAttempts?: string;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Adds the options both commands take. */
export function addAgentOptions(command: Command): Command {
  addModelOptions(
    addBackendOptions(command)
      .option(
        '-d, --data <path>',
        'a data file or directory to analyse (repeatable); only these can be read',
        collect,
        [],
      )
      .option('--context <file>', 'a text file of context for the model, e.g. what the columns mean'),
  )
    .option('--approve', 'show each piece of code and ask to run, skip or edit it first')
    .option('-o, --output-dir <dir>', 'where to save charts and files the code writes', DEFAULT_OUTPUT_DIR)
    .option('-t, --timeout <duration>', 'wall-clock limit of each execution, e.g. 90s or 5m (default: 1m)')
    .option('--max-steps <n>', 'model calls with tools per question before it must answer', undefined)
    .option('--max-attempts <n>', 'failed executions in a row before the model must stop and explain', undefined)
    .addHelpText('after', `${UNITS_HELP}${KEYS_HELP}`);
  return addVolumeOption(addNetworkOption(addLimitOptions(command)));
}

/**
 * Chooses and builds a ChatModel from options, the environment and an
 * optional config file, in that order of precedence:
 *   options (CLI flags) > SANDCELL_* / provider variables > config file > defaults.
 * Keys come only from options or the environment, never from the config file.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ModelConfigurationError } from '../errors.js';
import { type ChatModel, REASONING_EFFORTS, type ReasoningEffort } from '../model.js';
import { AnthropicChatModel } from './anthropic.js';
import { OpenAIChatModel } from './openai.js';

export type ProviderName = 'openai' | 'azure' | 'anthropic';
export const PROVIDERS: readonly ProviderName[] = ['openai', 'azure', 'anthropic'];

export const DEFAULT_MODELS: Record<Exclude<ProviderName, 'azure'>, string> = {
  openai: 'gpt-4.1',
  anthropic: 'claude-sonnet-4-5',
};

export interface ModelSelection {
  /** @default SANDCELL_PROVIDER, the config file, else the provider whose key is set (OpenAI first) */
  provider?: string;
  /** @default SANDCELL_MODEL, the config file, else gpt-4.1 / claude-sonnet-4-5 (Azure: AZURE_OPENAI_DEPLOYMENT) */
  model?: string;
  /** An OpenAI-compatible (or Anthropic-compatible) endpoint; for Azure, the resource endpoint. */
  baseURL?: string;
  apiKey?: string;
  reasoningEffort?: string;
  /** Azure OpenAI API version. @default OPENAI_API_VERSION */
  apiVersion?: string;
  maxRetries?: number;
  timeoutMs?: number;
  /** @default true */
  stream?: boolean;
}

/** The config file's fields (all optional). */
export interface SandcellConfig {
  provider?: string;
  model?: string;
  baseURL?: string;
  reasoningEffort?: string;
  apiVersion?: string;
  maxRetries?: number;
  timeoutMs?: number;
  stream?: boolean;
}

const CONFIG_KEYS = new Set([
  'provider',
  'model',
  'baseURL',
  'reasoningEffort',
  'apiVersion',
  'maxRetries',
  'timeoutMs',
  'stream',
]);

/** Where config is looked for: SANDCELL_CONFIG, ./sandcell.config.json, then $XDG_CONFIG_HOME/sandcell/config.json. */
export function configPaths(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string[] {
  if (env.SANDCELL_CONFIG) return [env.SANDCELL_CONFIG];
  const configHome = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return [path.join(cwd, 'sandcell.config.json'), path.join(configHome, 'sandcell', 'config.json')];
}

/** Reads the first config file that exists; a broken one is an error naming the file. */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): { config: SandcellConfig; file?: string } {
  const explicit = Boolean(env.SANDCELL_CONFIG);
  for (const file of configPaths(env, cwd)) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      if (explicit || (error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ModelConfigurationError(`Cannot read the config file ${file}: ${(error as Error).message}`);
      }
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ModelConfigurationError(`The config file ${file} is not valid JSON: ${(error as Error).message}`);
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      throw new ModelConfigurationError(`The config file ${file} must hold a JSON object.`);
    }
    const unknown = Object.keys(value).filter((key) => !CONFIG_KEYS.has(key));
    if (unknown.length > 0) {
      const keyHint = unknown.some((key) => /key/i.test(key)) ? ' API keys go in the environment, not in files.' : '';
      throw new ModelConfigurationError(
        `The config file ${file} has unknown fields: ${unknown.join(', ')}. Known: ${[...CONFIG_KEYS].join(', ')}.${keyHint}`,
      );
    }
    return { config: value as SandcellConfig, file };
  }
  return { config: {} };
}

function inferProvider(selection: ModelSelection, env: NodeJS.ProcessEnv, config: SandcellConfig): string {
  const chosen = selection.provider ?? env.SANDCELL_PROVIDER ?? config.provider;
  if (chosen) return chosen;
  if (selection.baseURL || env.OPENAI_API_KEY || env.OPENAI_BASE_URL || config.baseURL) return 'openai';
  if (env.ANTHROPIC_API_KEY) return 'anthropic';
  if (env.AZURE_OPENAI_API_KEY && env.AZURE_OPENAI_ENDPOINT) return 'azure';
  return 'openai';
}

/**
 * Whether the selection, the environment or the config file name a model at
 * all (a provider, a model, an endpoint or a provider's key). A server with
 * none runs without a model; one that names a model fails loudly if it is wrong.
 */
export function modelIsConfigured(
  selection: ModelSelection = {},
  env: NodeJS.ProcessEnv = process.env,
  config: SandcellConfig = loadConfig(env).config,
): boolean {
  return [
    selection.provider,
    selection.model,
    selection.baseURL,
    env.SANDCELL_PROVIDER,
    env.SANDCELL_MODEL,
    env.OPENAI_API_KEY,
    env.OPENAI_BASE_URL,
    env.ANTHROPIC_API_KEY,
    env.AZURE_OPENAI_API_KEY && env.AZURE_OPENAI_ENDPOINT,
    config.provider,
    config.model,
    config.baseURL,
  ].some((value) => Boolean(value?.trim()));
}

function orUndefined(value: string | undefined): string | undefined {
  return value?.trim() ? value.trim() : undefined;
}

/** Resolved here from `env`: an empty string tells the provider not to read process.env again. */
function resolved(value: string | undefined): string {
  return value?.trim() ?? '';
}

/** Builds the ChatModel the selection, environment and config file describe. */
export function createChatModel(
  selection: ModelSelection = {},
  env: NodeJS.ProcessEnv = process.env,
  config: SandcellConfig = loadConfig(env).config,
): ChatModel {
  const provider = inferProvider(selection, env, config);
  if (!PROVIDERS.includes(provider as ProviderName)) {
    throw new ModelConfigurationError(
      `Unknown provider ${JSON.stringify(provider)}: use one of ${PROVIDERS.join(', ')} (--provider).`,
    );
  }
  const reasoningEffort = selection.reasoningEffort ?? env.SANDCELL_REASONING_EFFORT ?? config.reasoningEffort;
  if (reasoningEffort !== undefined && !REASONING_EFFORTS.includes(reasoningEffort as ReasoningEffort)) {
    throw new ModelConfigurationError(
      `Unknown reasoning effort ${JSON.stringify(reasoningEffort)}: use one of ${REASONING_EFFORTS.join(', ')} (--reasoning-effort).`,
    );
  }
  const common = {
    maxRetries: selection.maxRetries ?? config.maxRetries,
    timeoutMs: selection.timeoutMs ?? config.timeoutMs,
    stream: selection.stream ?? config.stream,
  };
  const explicitModel = orUndefined(selection.model ?? env.SANDCELL_MODEL ?? config.model);
  if (provider === 'anthropic') {
    if (reasoningEffort) {
      throw new ModelConfigurationError(
        '--reasoning-effort applies to OpenAI reasoning models; leave it out with --provider anthropic.',
      );
    }
    const baseURL = orUndefined(selection.baseURL ?? env.ANTHROPIC_BASE_URL ?? config.baseURL);
    return new AnthropicChatModel({
      ...common,
      model: explicitModel ?? DEFAULT_MODELS.anthropic,
      apiKey: resolved(selection.apiKey ?? env.ANTHROPIC_API_KEY),
      baseURL: resolved(baseURL),
    });
  }
  if (provider === 'azure') {
    const model = explicitModel ?? orUndefined(env.AZURE_OPENAI_DEPLOYMENT);
    if (!model) {
      throw new ModelConfigurationError(
        'Azure OpenAI needs the deployment name: pass --model or set AZURE_OPENAI_DEPLOYMENT.',
      );
    }
    return new OpenAIChatModel({
      ...common,
      model,
      apiKey: resolved(selection.apiKey ?? env.AZURE_OPENAI_API_KEY),
      reasoningEffort: reasoningEffort as ReasoningEffort | undefined,
      azure: {
        endpoint: resolved(selection.baseURL ?? env.AZURE_OPENAI_ENDPOINT ?? config.baseURL),
        apiVersion: resolved(selection.apiVersion ?? env.OPENAI_API_VERSION ?? config.apiVersion),
      },
    });
  }
  const baseURL = orUndefined(selection.baseURL ?? env.OPENAI_BASE_URL ?? config.baseURL);
  if (baseURL && !explicitModel) {
    throw new ModelConfigurationError(
      `Name the model served at ${baseURL}: pass --model (e.g. --model llama3.1 for Ollama) or set SANDCELL_MODEL.`,
    );
  }
  return new OpenAIChatModel({
    ...common,
    model: explicitModel ?? DEFAULT_MODELS.openai,
    apiKey: resolved(selection.apiKey ?? env.OPENAI_API_KEY),
    baseURL: resolved(baseURL),
    reasoningEffort: reasoningEffort as ReasoningEffort | undefined,
  });
}

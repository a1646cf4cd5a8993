/** What `chat` and `ask` share: their options, the model, the data chat, and how model failures end the command. */
import { readFile } from 'node:fs/promises';
import { resolveDataRoots } from '../agents/data-roots.js';
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type ChatModel,
  createChatModel,
  DataChat,
  type DataChatOptions,
  ModelConfigurationError,
  ModelResponseError,
  ModelUnavailableError,
} from '../agents/index.js';
import type { SandboxBackend } from '../backends/spec.js';
import { InvalidInputError, InvalidPathError } from '../errors.js';
import { createSession } from '../session/session.js';
import type { AgentCommandOptions, ModelCliOptions } from './agent-flags.js';
import { backendFromOptions } from './backend-option.js';
import { CliExit, EXIT_MODEL_FAILURE, EXIT_USAGE } from './exit-codes.js';
import { limitSessionOptions } from './limit-options.js';
import { networkSessionOptions } from './network-options.js';
import { optionalDurationFlag } from './unit-flags.js';
import { volumeSessionOptions } from './volume-options.js';

const MAX_CONTEXT_BYTES = 64 * 1024;

function positiveInteger(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new CliExit(EXIT_USAGE, `${flag} takes a positive integer; got ${JSON.stringify(value)}.`);
  return number;
}

export function createModel(options: ModelCliOptions): ChatModel {
  return createChatModel({
    provider: options.provider,
    model: options.model,
    baseURL: options.baseUrl,
    reasoningEffort: options.reasoningEffort,
    stream: options.stream === false ? false : undefined,
  });
}

async function readContext(file: string | undefined): Promise<string | undefined> {
  if (!file) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CliExit(EXIT_USAGE, `Cannot read the context file ${file}: ${(error as Error).message}`);
  }
  if (Buffer.byteLength(text) > MAX_CONTEXT_BYTES) {
    throw new CliExit(
      EXIT_USAGE,
      `The context file ${file} is over ${MAX_CONTEXT_BYTES / 1024} KiB; give the model a shorter description.`,
    );
  }
  return text;
}

/** Builds the model (failing fast on configuration), then the session and the data. */
export async function openDataChat(
  options: AgentCommandOptions,
  extra: {
    onEvent: DataChatOptions['onEvent'];
    approve?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
    /** Shows progress: 'starting sandbox', then 'reading data'. */
    progress?: (text: string) => void;
    /** Used instead of the backend the flags name. */
    backend?: SandboxBackend;
  },
): Promise<DataChat> {
  const model = createModel(options);
  const timeoutMs = optionalDurationFlag('--timeout', options.timeout);
  const context = await readContext(options.context);
  const maxSteps = positiveInteger('--max-steps', options.maxSteps);
  const maxAttempts = positiveInteger('--max-attempts', options.maxAttempts);
  await resolveDataRoots(options.data); // a bad --data path fails before a sandbox starts
  const backend = extra.backend ?? (await backendFromOptions(options));
  const limits = limitSessionOptions(options);
  extra.progress?.('starting sandbox');
  const session = await createSession({
    backend,
    ...(options.env ? { environmentName: options.env } : {}),
    ...limits,
    ...networkSessionOptions(options),
    ...volumeSessionOptions(options),
    ...(timeoutMs ? { timeoutMs } : {}),
  });
  extra.progress?.('reading data');
  return DataChat.create({
    model,
    session,
    ownSession: true,
    data: options.data,
    context,
    outputDir: options.outputDir,
    maxSteps,
    maxAttempts,
    // A --data file goes into the session whole: the largest one it may take.
    ...(limits.fileTransferBytes ? { maxFileBytes: limits.fileTransferBytes } : {}),
    approve: extra.approve,
    onEvent: extra.onEvent,
  });
}

/** Model and input failures become a message and an exit code; anything else goes to main's handler. */
export function toCliExit(error: unknown): unknown {
  if (
    error instanceof ModelConfigurationError ||
    error instanceof InvalidInputError ||
    error instanceof InvalidPathError
  ) {
    return new CliExit(EXIT_USAGE, `sandcell: ${error.message}`);
  }
  if (error instanceof ModelUnavailableError || error instanceof ModelResponseError) {
    return new CliExit(EXIT_MODEL_FAILURE, `sandcell: ${error.message}`);
  }
  return error;
}

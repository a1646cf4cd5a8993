/**
 * Turns an SDK's error into one of ours, with a message that says what to
 * check. Both official SDKs share the same error classes by name and shape.
 */
import { AbortError } from '../../errors.js';
import { ModelConfigurationError, ModelResponseError, ModelUnavailableError } from '../errors.js';

export interface ProviderContext {
  /** Who we talked to, for messages: "OpenAI", "Anthropic", "the OpenAI-compatible server". */
  label: string;
  baseURL: string;
  model: string;
  /** The environment variable (or option) holding the key, named in 401 messages. */
  keyVariable: string;
  /** How to point sandcell elsewhere, named when the endpoint is unreachable. */
  baseUrlHint: string;
}

function apiMessage(error: { message?: string; error?: unknown }): string {
  const body = error.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  const text = body?.error?.message ?? body?.message ?? error.message;
  return typeof text === 'string' ? text : String(text);
}

export function mapProviderError(error: unknown, context: ProviderContext): Error {
  if (!(error instanceof Error)) return new ModelResponseError(String(error));
  const name = error.constructor.name;
  const status = (error as { status?: unknown }).status;
  if (name === 'APIUserAbortError' || error.name === 'AbortError')
    return new AbortError('The model request was aborted.');
  if (name === 'APIConnectionTimeoutError') {
    return new ModelUnavailableError(
      `${context.label} at ${context.baseURL} did not answer in time (after retries). Check that the server is up, or raise the request timeout.`,
      { cause: error },
    );
  }
  if (name === 'APIConnectionError') {
    return new ModelUnavailableError(
      `Cannot reach ${context.label} at ${context.baseURL}: ${describeCause(error)}. ${context.baseUrlHint}`,
      { cause: error },
    );
  }
  if (typeof status === 'number') {
    const detail = apiMessage(error as { message?: string; error?: unknown });
    if (status === 401 || status === 403) {
      return new ModelConfigurationError(
        `${context.label} at ${context.baseURL} refused the credentials (HTTP ${status}: ${detail}). Check ${context.keyVariable}.`,
        { cause: error },
      );
    }
    if (status === 404) {
      return new ModelResponseError(
        `${context.label} at ${context.baseURL} answered 404 for model ${JSON.stringify(context.model)} (${detail}). Check --model (or the base URL: OpenAI-compatible servers usually end in /v1).`,
        { cause: error, status },
      );
    }
    return new ModelResponseError(`${context.label} answered HTTP ${status}: ${detail}`, { cause: error, status });
  }
  return new ModelResponseError(`${context.label}: ${error.message}`, { cause: error });
}

function describeCause(error: Error): string {
  let cause: unknown = error.cause;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code === 'ECONNREFUSED' ? 'connection refused' : code;
  return cause instanceof Error ? cause.message : error.message;
}

/** An option, else the environment variable; an empty string means "none" (the environment is not read). */
export function fromOption(value: string | undefined, variable: string): string | undefined {
  if (value !== undefined) return value.trim() || undefined;
  return process.env[variable]?.trim() || undefined;
}

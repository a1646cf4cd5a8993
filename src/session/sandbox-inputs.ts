/**
 * Checks of what a caller hands a context or a command: a working directory,
 * environment variables, a command line, text for stdin, a timeout. Each is
 * bounded in size; anything unusable is an InvalidInputError saying what fits.
 * Paths are not confined: the sandbox is the boundary, and a command may well
 * run in /tmp.
 */
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { DATA_DIRECTORY } from './session-context.js';

/** Most environment variables one context or command may be given. */
export const MAX_ENVIRONMENT_ENTRIES = 64;
/** Longest value of one of them, in UTF-8 bytes. */
export const MAX_ENVIRONMENT_VALUE_BYTES = 32 * 1024;
/** Longest working directory, in UTF-8 bytes (Linux's PATH_MAX). */
export const MAX_PATH_BYTES = 4096;

const ENVIRONMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;

/** The working directory as an absolute path (relative ones are under /mnt/data); undefined stays undefined. */
export function checkWorkingDirectory(cwd: unknown): string | undefined {
  if (cwd === undefined) return undefined;
  if (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0')) {
    throw new InvalidInputError('`cwd` must be a non-empty path without NUL bytes.');
  }
  if (Buffer.byteLength(cwd, 'utf8') > MAX_PATH_BYTES) {
    throw new InvalidInputError(`\`cwd\` is longer than ${MAX_PATH_BYTES} bytes.`);
  }
  return path.posix.resolve(DATA_DIRECTORY, cwd);
}

/** Environment variables: at most MAX_ENVIRONMENT_ENTRIES names of a shell variable, string values without NUL. */
export function checkEnvironment(env: unknown): Record<string, string> | undefined {
  if (env === undefined) return undefined;
  if (typeof env !== 'object' || env === null || Array.isArray(env)) {
    throw new InvalidInputError('`env` must be an object of variable names to string values.');
  }
  const entries = Object.entries(env);
  if (entries.length > MAX_ENVIRONMENT_ENTRIES) {
    throw new InvalidInputError(
      `\`env\` has ${entries.length} variables; at most ${MAX_ENVIRONMENT_ENTRIES} are accepted. Put more in a file under /mnt/data.`,
    );
  }
  for (const [name, value] of entries) {
    if (!ENVIRONMENT_NAME.test(name)) {
      throw new InvalidInputError(`\`env\` has ${JSON.stringify(name.slice(0, 80))}, which is not a variable name.`);
    }
    if (typeof value !== 'string' || value.includes('\0')) {
      throw new InvalidInputError(`\`env.${name}\` must be a string without NUL bytes.`);
    }
    if (Buffer.byteLength(value, 'utf8') > MAX_ENVIRONMENT_VALUE_BYTES) {
      throw new InvalidInputError(
        `\`env.${name}\` is longer than ${MAX_ENVIRONMENT_VALUE_BYTES} bytes; put large values in a file under /mnt/data.`,
      );
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Text for a sandbox (a command line, stdin): a string within `maxBytes`; `what` names it in messages. */
export function checkText(what: string, text: unknown, maxBytes: number, options: { allowNul?: boolean } = {}): string {
  if (typeof text !== 'string') throw new InvalidInputError(`${what} must be a string.`);
  if (!options.allowNul && text.includes('\0')) throw new InvalidInputError(`${what} must not contain NUL bytes.`);
  const size = text.length * 3 <= maxBytes ? text.length : Buffer.byteLength(text, 'utf8');
  if (size > maxBytes) {
    throw new InvalidInputError(
      `${what} is ${size} bytes; the limit is ${maxBytes} (option \`maxCodeBytes\`). Put large data in a file with session.files.write().`,
    );
  }
  return text;
}

/** A per-call timeout: undefined, or a positive finite number of milliseconds. */
export function checkTimeout(timeoutMs: unknown): number | undefined {
  if (timeoutMs === undefined) return undefined;
  if (typeof timeoutMs !== 'number' || !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new InvalidInputError('`timeoutMs` must be a positive number.');
  }
  return timeoutMs;
}

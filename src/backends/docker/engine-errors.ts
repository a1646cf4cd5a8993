/**
 * Errors of Docker Engine's API: their text, the ones a removal may ignore,
 * and the ones that pass. Under many parallel creations runc answers "cannot
 * start a stopped process" (or "… an already running container", "container
 * process is already dead"), a removal
 * still in progress answers 409, the socket is reset: creation retries those
 * (a few times, backing off) and nothing else, so a wrong image or a refused
 * option fails at once.
 */

/** Attempts in all, the first included. */
export const CREATION_ATTEMPTS = 4;
/** Wait before the second attempt; doubled for each further one (with jitter). */
export const RETRY_BASE_DELAY_MS = 100;

const TRANSIENT_MESSAGES = [
  // runc: "cannot start a stopped process: unknown", under parallel creations.
  /stopped process/i,
  // runc, the same race seen from the other side: "OCI runtime start failed: cannot start an
  // already running container" (each attempt makes its objects anew, so nothing is started twice).
  /cannot start an already running container/i,
  // runc again, under a busy machine: "OCI runtime start failed: container process is already dead"
  // (the new container's first process was gone before runc could start it; seen on the volume holder).
  /container process is already dead/i,
  // A removal (of a container or volume of an earlier attempt) the engine is still doing.
  /is already in progress/i,
  /socket hang up/i,
  /connection reset by peer/i,
];
const TRANSIENT_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

export function statusOf(error: unknown): number | undefined {
  return (error as { statusCode?: number } | undefined)?.statusCode;
}

/** For removals: gone already (404) or being removed (409) is done. */
export function ignoreMissing(error: unknown): void {
  if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
}

/** The engine's message when it sent one, else the error's own. */
export function engineErrorText(error: unknown): string {
  const json = (error as { json?: { message?: string } } | undefined)?.json;
  return json?.message ?? (error as Error | undefined)?.message ?? String(error);
}

/** Whether trying the same operation again may well succeed. */
export function isTransientEngineError(error: unknown): boolean {
  if (TRANSIENT_SOCKET_CODES.has((error as NodeJS.ErrnoException | undefined)?.code ?? '')) return true;
  const status = statusOf(error);
  // Only the engine's own failures (500) and conflicts (409) can pass; 4xx mistakes do not.
  if (status !== undefined && status !== 500 && status !== 409) return false;
  const text = engineErrorText(error);
  return TRANSIENT_MESSAGES.some((pattern) => pattern.test(text));
}

/** Every attempt failed: `cause` is the first failure, `last` the final one. */
export class EngineRetriesExhausted extends Error {
  constructor(
    readonly attempts: number,
    readonly last: unknown,
    first: unknown,
  ) {
    super(`${engineErrorText(last)} (failed ${attempts} times)`, { cause: first });
    this.name = 'EngineRetriesExhausted';
  }
}

export interface RetryOptions {
  attempts?: number;
  baseDelayMs?: number;
  signal?: AbortSignal;
  isTransient?: (error: unknown) => boolean;
}

/**
 * Runs `operation` (which must clean up after itself when it fails) until it
 * succeeds, fails for a reason that is not transient, or has been tried
 * `attempts` times. A first failure that is not transient is thrown as is.
 */
export async function retryTransient<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? CREATION_ATTEMPTS;
  const isTransient = options.isTransient ?? isTransientEngineError;
  let first: unknown;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (attempt === 1) first = error;
      const retry = attempt < attempts && isTransient(error) && !options.signal?.aborted;
      if (!retry) throw attempt === 1 ? error : new EngineRetriesExhausted(attempt, error, first);
      const delay = (options.baseDelayMs ?? RETRY_BASE_DELAY_MS) * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random())));
    }
  }
}

import { describe, expect, it } from 'vitest';
import { EngineRetriesExhausted, isTransientEngineError, retryTransient } from './engine-errors.js';

/** What dockerode rejects with when the engine answers an error status. */
function engineError(statusCode: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });
}

const stoppedProcess = () => engineError(500, 'cannot start a stopped process: unknown');

describe('isTransientEngineError', () => {
  it.each([
    [stoppedProcess()],
    [engineError(500, 'OCI runtime start failed: cannot start an already running container: unknown')],
    [engineError(500, 'OCI runtime start failed: container process is already dead: unknown')],
    [engineError(409, 'removal of container 3f2a is already in progress')],
    [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    [new Error('socket hang up')],
  ])('retries %s', (error) => {
    expect(isTransientEngineError(error)).toBe(true);
  });

  it.each([
    [engineError(404, 'No such image: sandcell-runtime:0')],
    [engineError(400, 'invalid CgroupParent')],
    [engineError(409, 'Conflict. The container name "/x" is already in use')],
    [engineError(500, 'OCI runtime create failed: permission denied')],
    [new Error('anything else')],
  ])('does not retry %s', (error) => {
    expect(isTransientEngineError(error)).toBe(false);
  });
});

describe('retryTransient', () => {
  it('tries again after transient failures and returns what the operation gives', async () => {
    const attempts: number[] = [];
    const result = await retryTransient(
      async (attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw stoppedProcess();
        return 'started';
      },
      { baseDelayMs: 1 },
    );
    expect(result).toBe('started');
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('throws a failure that is not transient at once, as it is', async () => {
    const refused = engineError(404, 'No such image');
    let calls = 0;
    const failing = retryTransient(
      async () => {
        calls++;
        throw refused;
      },
      { baseDelayMs: 1 },
    );
    await expect(failing).rejects.toBe(refused);
    expect(calls).toBe(1);
  });

  it('gives up after the bounded number of attempts, keeping the first failure as the cause', async () => {
    const failures = [stoppedProcess(), stoppedProcess(), stoppedProcess()];
    let calls = 0;
    const error = await retryTransient(
      async () => {
        throw failures[calls++];
      },
      { attempts: 3, baseDelayMs: 1 },
    ).catch((caught: unknown) => caught);
    expect(calls).toBe(3);
    expect(error).toBeInstanceOf(EngineRetriesExhausted);
    expect((error as EngineRetriesExhausted).cause).toBe(failures[0]);
    expect((error as EngineRetriesExhausted).last).toBe(failures[2]);
    expect((error as Error).message).toMatch(/cannot start a stopped process.*failed 3 times/);
  });

  it('stops retrying once the caller aborts', async () => {
    const controller = new AbortController();
    let calls = 0;
    const failing = retryTransient(
      async () => {
        calls++;
        controller.abort();
        throw stoppedProcess();
      },
      { baseDelayMs: 1, signal: controller.signal },
    );
    await expect(failing).rejects.toThrow(/stopped process/);
    expect(calls).toBe(1);
  });
});

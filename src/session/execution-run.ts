/**
 * One execution in one context: sends it, gathers its events within the
 * host-side caps, interrupts it at its timeout or abort, and, when the code
 * ignores the interrupt, has its kernel replaced and reports the state lost.
 * Its kernel's (or sandbox's) death while it runs ends it the same way.
 */
import { performance } from 'node:perf_hooks';
import type { Execution, InputRequest, RunOptions } from './execution.js';
import type { KernelConnection } from './kernel-connection.js';
import { OutputCollector } from './output-collector.js';
import type { SessionContext, StateLoss } from './session-context.js';
import { EVERY_CONTEXT_LOST, stateLostIn } from './state-loss.js';

/** A line of input given to the code, in characters; past it the line is cut. */
export const INPUT_REPLY_CHARS = 1024 * 1024;

export interface ExecutionRunSettings {
  timeoutMs: number;
  interruptGraceMs: number;
  outputBytes: number;
  resultBytes: number;
  /** Why the state was lost before this run (reported by it). */
  stateLostBefore?: string;
  /**
   * The code ignored the interrupt for `interruptGraceMs`: replace its kernel.
   * Resolves with how far the replacement went: the context's kernel alone,
   * or (it could not be restarted, for the reason given) the whole sandbox.
   */
  replaceKernel: () => Promise<{ scope: 'context' } | { scope: 'sandbox'; why: string }>;
}

type Ended = Omit<Execution, 'stdout' | 'stderr' | 'results' | 'durationMs' | 'context' | 'language'>;

export function runExecution(
  connection: KernelConnection,
  context: SessionContext,
  code: string,
  options: RunOptions,
  settings: ExecutionRunSettings,
): Promise<Execution> {
  const started = performance.now();
  const { timeoutMs } = settings;
  const collector = new OutputCollector(settings.outputBytes, settings.resultBytes, options);
  const id = connection.newId();

  return new Promise<Execution>((resolve, reject) => {
    let timedOut = false;
    let interrupted = false;
    /** The grace is over and the kernel is being replaced: only that replacement ends the run now. */
    let replacing = false;
    let finished = false;
    let graceTimer: NodeJS.Timeout | undefined;

    /** Ends the run's timers and subscriptions; false when it had already ended. */
    const settle = (): boolean => {
      if (finished) return false;
      finished = true;
      clearTimeout(timeoutTimer);
      clearTimeout(graceTimer);
      unsubscribe();
      options.signal?.removeEventListener('abort', onAbort);
      if (context.running === running) context.running = undefined;
      return true;
    };

    const finish = (execution: Ended): void => {
      if (!settle()) return;
      const lostReason = execution.stateLostReason ?? settings.stateLostBefore;
      resolve({
        ...execution,
        context: context.id,
        language: context.language,
        stdout: collector.stdout,
        stderr: collector.stderr,
        results: collector.results,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        ...(lostReason ? { stateLost: true, stateLostReason: lostReason } : {}),
        ...(collector.truncated || execution.outputTruncated ? { outputTruncated: true } : {}),
      });
    };

    /** The kernel is gone, its state with it: end now, saying why. */
    const lose = ({ name, reason }: StateLoss): void => {
      if (finished) return;
      context.executionCount += 1;
      finish({
        status: timedOut ? 'timeout' : 'error',
        error: { name: timedOut ? 'TimeoutError' : name, value: reason, traceback: [] },
        executionCount: context.executionCount,
        stateLostReason: reason,
      });
    };

    const interrupt = (): void => {
      if (interrupted || finished) return;
      interrupted = true;
      connection.send({ type: 'interrupt', id, context: context.id });
      graceTimer = setTimeout(() => {
        replacing = true;
        void settings
          .replaceKernel()
          .catch((error: unknown) => ({ scope: 'sandbox' as const, why: (error as Error).message }))
          .then((outcome) => {
            const what = timedOut
              ? `Execution exceeded the time limit of ${timeoutMs / 1000} s and did not stop when interrupted`
              : 'The execution was interrupted but did not stop';
            const reason =
              outcome.scope === 'context'
                ? `${what}, so the kernel was killed and restarted: ${stateLostIn(context.id)}`
                : `${what}, and its kernel could not be restarted alone (${outcome.why}), so the whole sandbox was killed and restarted: ${EVERY_CONTEXT_LOST}`;
            lose({ name: 'KernelDied', reason });
          });
      }, settings.interruptGraceMs);
    };

    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      interrupt();
    }, timeoutMs);
    const onAbort = (): void => interrupt();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const running = {
      interrupt,
      lose: (loss: StateLoss) => {
        if (!replacing) lose(loss);
      },
      abandon: (error: Error) => {
        if (settle()) reject(error);
      },
    };
    context.running = running;

    const unsubscribe = connection.subscribe(id, context.id, (event, messageBytes) => {
      switch (event.type) {
        case 'stream':
          collector.stream(event.name, event.text);
          break;
        case 'result':
          collector.result('execute_result', event.data, event.metadata, messageBytes);
          break;
        case 'display':
          collector.result('display_data', event.data, event.metadata, messageBytes);
          break;
        case 'message-dropped':
          collector.dropped();
          break;
        case 'error':
          collector.fail(event);
          break;
        case 'input-request':
          answerInput(event);
          break;
        case 'execution-end': {
          context.executionCount = event.executionCount ?? context.executionCount + 1;
          if (timedOut) {
            collector.error = {
              name: 'TimeoutError',
              value: `Execution exceeded the time limit of ${timeoutMs / 1000} s and was interrupted; the session's state was kept.`,
              traceback: collector.error?.traceback ?? [],
            };
          }
          finish({
            status: timedOut ? 'timeout' : collector.error ? 'error' : 'ok',
            ...(collector.error ? { error: collector.error } : {}),
            executionCount: context.executionCount,
            outputTruncated: event.outputTruncated,
            ...(event.exitStatus !== undefined ? { exitStatus: event.exitStatus } : {}),
          });
          break;
        }
      }
    });

    /** Asks the caller (one request at a time: the kernel waits for this answer); nothing is sent once the run ended. */
    const answerInput = (request: InputRequest): void => {
      const { onInput } = options;
      if (typeof onInput !== 'function') return; // the kernel was not told it may ask
      const reply = (answer: { value: string } | { cancelled: true }) => {
        if (!finished) connection.send({ type: 'input-reply', id, context: context.id, ...answer });
      };
      Promise.resolve()
        .then(() => onInput({ prompt: request.prompt, password: request.password }))
        .then(
          (value) =>
            typeof value === 'string'
              ? reply({ value: value.slice(0, INPUT_REPLY_CHARS) })
              : reply({ cancelled: true }),
          () => reply({ cancelled: true }),
        );
    };

    const stdin = typeof options.onInput === 'function' ? { stdin: true } : {};
    const waitForEventLoop = options.waitForEventLoop === true ? { waitForEventLoop: true } : {};
    connection.send({ type: 'execute', id, code, context: context.id, ...stdin, ...waitForEventLoop });
  });
}

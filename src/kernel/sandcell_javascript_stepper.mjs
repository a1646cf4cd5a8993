// Runs a stepped cell (a generator: sandcell_javascript_cell.mjs) to its end. Each stretch of the
// cell between two top-level awaits runs in its own vm call, and between stretches the awaited
// value is waited for as `await` would (a rejection is thrown back in at the `await`).
//
// A vm call with breakOnSigint (SIGINT then ends a loop wherever in the cell it runs) is not free:
// it starts and joins a thread (20 to 100 µs, where a native await costs under 1 µs), and a SIGINT
// that lands while it sets up or tears down its handler is lost, or even ends the process with
// Node's default action. So only some stretches are guarded: the first GUARDED_STEPS of a cell
// (a cell awaits a few times, then loops), then at most one every GUARD_INTERVAL_MS. A cell that
// awaits in a loop runs mostly unguarded; a never-ending loop that starts in one of those
// stretches cannot be interrupted, and the host restarts the kernel.
import vm from 'node:vm';

const GUARDED_STEPS = 10;
const GUARD_INTERVAL_MS = 100;

/** The global property holding `runStep` (a symbol: invisible to `Object.keys(globalThis)`). */
export const STEP_KEY = 'sandcell.step';

// The cells may replace these globals; the kernel keeps the originals.
const NativePromise = Promise;
const promiseThen = Promise.prototype.then;
const promiseResolve = Promise.resolve.bind(Promise);
const STEP_SCRIPT = new vm.Script(`globalThis[Symbol.for(${JSON.stringify(STEP_KEY)})]()`, {
  filename: 'sandcell-step',
});

let pendingStep = null;

/** What the step script calls: resumes the cell once. */
export function runStep() {
  return pendingStep();
}

/**
 * A promise of the cell's return value (its boxed last expression), or of the error it threw.
 * Once `abandoned()` (the execution was interrupted or failed meanwhile), the cell is not resumed.
 */
export function driveCell(generator, abandoned) {
  return new NativePromise((resolve, reject) => {
    let steps = 0;
    let lastGuardedEnd = 0;
    const step = (method, value) => {
      if (steps > 0 && abandoned()) return;
      let next;
      pendingStep = () => generator[method](value);
      const guarded = steps < GUARDED_STEPS || performance.now() - lastGuardedEnd >= GUARD_INTERVAL_MS;
      steps += 1;
      try {
        next = guarded ? STEP_SCRIPT.runInThisContext({ breakOnSigint: true }) : pendingStep();
      } catch (error) {
        reject(error);
        return;
      } finally {
        pendingStep = null;
        if (guarded) lastGuardedEnd = performance.now();
      }
      if (next.done) resolve(next.value);
      else {
        promiseThen.call(
          promiseResolve(next.value),
          (result) => step('next', result),
          (error) => step('throw', error),
        );
      }
    };
    step('next', undefined);
  });
}

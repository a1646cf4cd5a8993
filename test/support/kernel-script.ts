/**
 * Scripts for the scripted backend's kernels, written the way a test reads:
 * a table from the code a run is given to what the kernel does. Code the
 * table does not name fails the run with `UnexpectedCode`, so a test cannot
 * pass on a run it did not foresee. This is no Python: a test that needs
 * Python to be Python runs on a real sandbox.
 */
import { crc32, deflateSync } from 'node:zlib';
import type {
  ScriptedBackend,
  ScriptedRun,
  ScriptedRunContext,
  ScriptedStep,
} from '../../src/backends/scripted/index.js';

/** What the kernel does for one code: fixed steps, or steps worked out from the kernel's state and files. */
export type Answer = ScriptedStep[] | ((context: ScriptedRunContext) => ScriptedStep[] | Promise<ScriptedStep[]>);

/** Answers each run by its exact code. */
export function byCode(table: Record<string, Answer>): ScriptedRun {
  return (context) => {
    const answer = Object.hasOwn(table, context.code) ? table[context.code] : undefined;
    if (answer === undefined) {
      return [raised('UnexpectedCode', `the script has no answer for ${JSON.stringify(context.code)}`)];
    }
    return typeof answer === 'function' ? answer(context) : answer;
  };
}

export const printed = (text: string): ScriptedStep => ({ type: 'stdout', text });

/** The value of the last expression, as IPython shows it (`text/plain`), with any richer forms. */
export const value = (plain: string, richer: Record<string, unknown> = {}): ScriptedStep => ({
  type: 'result',
  data: { 'text/plain': plain, ...richer },
});

/** An exception in the user's code, with a traceback that names it as IPython's last line does. */
export const raised = (name: string, message: string, traceback: string[] = []): ScriptedStep => ({
  type: 'error',
  name,
  value: message,
  traceback: [...traceback, `${name}: ${message}`],
});

/**
 * A valid PNG of `width`×`height` pixels of noise (so it stays larger than
 * a KiB, as a real chart is): what a figure's bytes are to everything but a
 * picture viewer.
 */
export function pngImage(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const framed = Buffer.alloc(typed.length + 8);
    framed.writeUInt32BE(data.length, 0);
    typed.copy(framed, 4);
    framed.writeUInt32BE(crc32(typed), typed.length + 4);
    return framed;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits per channel, RGB, deflate, no filter method, no interlace
  const rows = Buffer.alloc((width * 3 + 1) * height);
  let seed = 12345;
  for (let index = 0; index < rows.length; index++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    rows[index] = index % (width * 3 + 1) === 0 ? 0 : seed >> 16;
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export const PNG = pngImage(32, 24);

/** A figure shown with plt.show(): a display of a PNG with matplotlib's text form. */
export const figure = (): ScriptedStep => ({
  type: 'display',
  data: { 'image/png': PNG.toString('base64'), 'text/plain': '<Figure size 640x480 with 1 Axes>' },
});

/** `name = …`: keeps `plain` (what `name` shows) in the kernel's state, then does `steps`. */
export function assign(name: string, plain: string, ...steps: ScriptedStep[]): Answer {
  return ({ state }) => {
    state.set(name, plain);
    return steps;
  };
}

/** A bare `name`: its value when assigned in this kernel, else a NameError. */
export function recall(name: string): Answer {
  return ({ state }) =>
    state.has(name) ? [value(String(state.get(name)))] : [raised('NameError', `name '${name}' is not defined`)];
}

/** Writes a file in /mnt/data, as the code `open(path, 'w').write(content)` would, then does `steps`. */
export function writes(path: string, content: string | Buffer, ...steps: ScriptedStep[]): Answer {
  return ({ files }) => {
    files.write(path, content);
    return steps;
  };
}

/** The code of every execution the backend's kernels were asked to run, in order: what really ran. */
export function codeRun(backend: ScriptedBackend): string[] {
  return backend.sandboxes.flatMap((sandbox) =>
    sandbox.requests.flatMap((request) => {
      const message = request as { type?: unknown; code?: unknown };
      return message.type === 'execute' && typeof message.code === 'string' ? [message.code] : [];
    }),
  );
}

/**
 * A kernel of names, for tests of state that outlives a kernel (snapshots): `name = value` binds the
 * text, `name = socket()` binds what a snapshot cannot keep (a function), a bare name shows its value
 * (a NameError when unbound).
 */
export function namesKernel({ code, state }: ScriptedRunContext): ScriptedStep[] {
  const assignment = /^(\w+) = (.*)$/.exec(code);
  if (assignment) {
    state.set(assignment[1] ?? '', assignment[2] === 'socket()' ? () => 'a socket' : assignment[2]);
    return [];
  }
  if (!state.has(code))
    return [{ type: 'error', name: 'NameError', value: `name '${code}' is not defined`, traceback: [] }];
  return [value(String(state.get(code)))];
}

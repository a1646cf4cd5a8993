// sandcell's JavaScript and TypeScript kernel: `node sandcell_javascript_kernel.mjs javascript|typescript`,
// started by the sandbox's supervisor per context (docs/kernel-protocol.md, "Kernels"): requests
// on fd 3, events on fd 4, the cells' stdout and stderr on fds 1 and 2, read by the supervisor.
//
// Cells run in this process's own global scope (no separate vm context: objects from Node's
// built-ins and from cells share one realm, so `instanceof Error` and `Array.isArray` behave),
// one at a time, each stretch between top-level awaits in a vm call with breakOnSigint, so SIGINT
// ends a synchronous loop; a pending `await` is ended by the SIGINT listener instead. A loop in an
// async function, after that function's own `await`, cannot be stopped from inside Node (only the
// cell's top level is stepped): the host restarts such a kernel.
//
// An execution ends when its top level returns, as a Jupyter cell does; what its callbacks print
// later is held for the next execution (sandcell_javascript_late_output.mjs). One asked to
// `waitForEventLoop` (`sandcell run script.js`) ends when the event loop is empty instead, as
// `node script.js` does: the channel stops keeping the loop alive, and 'beforeExit' says when
// the cell's timers, sockets and other work are done.
//
// `state-save` and `state-load` write the context's globals to a file and read them back
// (sandcell_javascript_state.mjs), in their turn as `reset` is.
import path from 'node:path';
import process from 'node:process';
import vm from 'node:vm';
import { complete, inspect } from './sandcell_javascript_assist.mjs';
import { PARSE_OPTIONS, rewriteCell } from './sandcell_javascript_cell.mjs';
import { openChannel } from './sandcell_javascript_channel.mjs';
import { installGlobals } from './sandcell_javascript_globals.mjs';
import { holdLateOutput } from './sandcell_javascript_late_output.mjs';
import { boundedMetadata, displayBundle, errorFields, plainText, syntaxError } from './sandcell_javascript_output.mjs';
import { loadParser } from './sandcell_javascript_parser.mjs';
import { captureBaseline, loadState, StateError, saveState } from './sandcell_javascript_state.mjs';
import { driveCell } from './sandcell_javascript_stepper.mjs';

const PROTOCOL_VERSION = 2;
const LANGUAGE = process.argv[2] === 'typescript' ? 'typescript' : 'javascript';
const OPTIONS = readOptions();
const OUTPUT_LIMIT = positiveNumber(OPTIONS.outputBytes, 1 << 20);
const RESULT_LIMIT = positiveNumber(OPTIONS.resultBytes, 32 << 20);
// Sources kept to show a line of a cell in a later traceback (a function defined cells ago).
const KEPT_CELLS = 1000;
const promiseThen = Promise.prototype.then;

function readOptions() {
  const raw = process.env.SANDCELL_KERNEL_OPTIONS ?? '{}';
  delete process.env.SANDCELL_KERNEL_OPTIONS;
  try {
    const options = JSON.parse(raw);
    return options !== null && typeof options === 'object' ? options : {};
  } catch {
    return {};
  }
}

function positiveNumber(value, fallback) {
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

class Interrupted extends Error {
  constructor() {
    super('the execution was interrupted (SIGINT)');
    this.name = 'Interrupted';
    this.sandcellTraceback = [`Interrupted: ${this.message}`];
  }
}

/** What Node reports (exit code 13) when a script's top level awaits what nothing is left to settle. */
class UnsettledTopLevelAwait extends Error {
  constructor() {
    super('the top level awaits a promise that nothing is left to settle: the event loop is empty');
    this.name = 'UnsettledTopLevelAwait';
    this.sandcellTraceback = [`UnsettledTopLevelAwait: ${this.message}`];
  }
}

let executionCount = 0;
/** The running execution: `{ id, count, done, failed, truncated, resultBytes, resolve }`. */
let current = null;
/** The execution that ends once the event loop is empty (`waitForEventLoop`), not when its top level returns. */
let endsWithLoop = null;
const cells = new Map();
const queue = [];
let draining = false;

const channel = openChannel({ onRequest: receive, onClose: () => process.exit(0) });
const resetGlobals = installGlobals(display);
// Before any cell: a state keeps only what the cells added to it.
const baseline = captureBaseline();
const lateOutput = holdLateOutput({
  isRunning: () => current !== null,
  outputBytes: OUTPUT_LIMIT,
  resultBytes: RESULT_LIMIT,
});
// They load while `ready` goes out (the first execution waits for them): a cold start is not held
// up by them, and a pool's warm context has them before its first cell.
const parserReady = loadParser();
parserReady.catch(() => {}); // each execution reports it
const typescriptReady = LANGUAGE === 'typescript' ? import('./sandcell_javascript_typescript.mjs') : undefined;

process.on('SIGINT', () => {
  if (current !== null) finish(current, { error: new Interrupted() });
});
process.on('uncaughtException', reportUncaught);
process.on('unhandledRejection', reportUncaught);
// Only while the channel lets the loop empty (an execution waits for it): that execution's work is done.
process.on('beforeExit', () => {
  channel.ref();
  const execution = endsWithLoop;
  if (execution === null) return;
  if (execution.returned) finish(execution, { box: execution.box });
  else finish(execution, { error: new UnsettledTopLevelAwait() });
});

channel.send({
  type: 'ready',
  protocolVersion: PROTOCOL_VERSION,
  language: LANGUAGE,
  version: process.versions.node,
  pid: process.pid,
});

function receive(request) {
  switch (request.type) {
    // Completion and inspection wait their turn behind executions, as a Jupyter kernel answers in order.
    case 'execute':
    case 'reset':
    case 'state-save':
    case 'state-load':
    case 'complete':
    case 'inspect':
      queue.push(request);
      if (!draining) void drain();
      break;
    case 'ping':
      channel.send({ type: 'reply', id: request.id, ok: true });
      break;
    case 'is-complete':
      isComplete(String(request.code ?? '')).then(
        (body) => channel.send({ type: 'reply', id: request.id, ok: true, ...body }),
        (error) => replyFailed(request, 'internal', String(error?.message ?? error)),
      );
      break;
    default:
      replyFailed(request, 'unknown-request', `unknown request type ${JSON.stringify(request.type)}`);
  }
}

function replyFailed(request, code, message) {
  channel.send({ type: 'reply', id: request.id, ok: false, error: { code, message } });
}

async function drain() {
  draining = true;
  while (queue.length > 0) {
    const request = queue.shift();
    if (request.type === 'execute') await execute(request);
    else if (request.type === 'complete' || request.type === 'inspect') assist(request);
    else if (request.type === 'state-save' || request.type === 'state-load') await state(request);
    else {
      resetGlobals();
      executionCount = 0;
      cells.clear();
      channel.send({ type: 'reply', id: request.id, ok: true });
    }
    // A SIGINT that came for the execution just ended is heard now, while none runs, not by the next.
    if (queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
  }
  draining = false;
}

async function state(request) {
  if (typeof request.path !== 'string' || !path.isAbsolute(request.path)) {
    replyFailed(request, 'invalid-request', `${request.type} needs an absolute path`);
    return;
  }
  try {
    if (request.type === 'state-save') {
      const report = saveState(request.path, { baseline, parser: await parserReady, executionCount });
      channel.send({ type: 'reply', id: request.id, ok: true, ...report, executionCount });
    } else {
      const report = loadState(request.path);
      executionCount = report.executionCount;
      channel.send({ type: 'reply', id: request.id, ok: true, ...report });
    }
  } catch (error) {
    const code = error instanceof StateError ? error.code : 'state-failed';
    replyFailed(request, code, String(error?.message ?? error));
  }
}

function assist(request) {
  const code = typeof request.code === 'string' ? request.code : '';
  try {
    const body =
      request.type === 'complete'
        ? complete(code, request.cursorPos)
        : inspect(code, request.cursorPos, request.detailLevel);
    channel.send({ type: 'reply', id: request.id, ok: true, ...body });
  } catch (error) {
    replyFailed(request, 'internal', String(error?.message ?? error));
  }
}

async function execute(request) {
  executionCount += 1;
  const execution = {
    id: request.id,
    count: executionCount,
    done: false,
    failed: false,
    truncated: false,
    resultBytes: 0,
  };
  const finished = new Promise((resolve) => {
    execution.resolve = resolve;
  });
  current = execution;
  // What the earlier cells' callbacks wrote since the last execution ended comes first.
  const lateCut = lateOutput.release((bundle, metadata) => emit(execution, 'display', bundle, metadata));
  if (lateCut) execution.truncated = true;
  try {
    const parser = await parserReady;
    const typescript = await typescriptReady;
    const run = prepare(parser, typescript, typeof request.code === 'string' ? request.code : '', execution.count);
    if (!execution.done) {
      if (request.waitForEventLoop === true) {
        endsWithLoop = execution;
        channel.unref();
      }
      const outcome = run(() => execution.done);
      promiseThen.call(
        outcome,
        (box) => returned(execution, box),
        (error) => finish(execution, { error }),
      );
    }
  } catch (error) {
    finish(execution, { error });
  }
  await finished;
}

/** Compiles a cell; returns a function that starts it and gives a promise of its boxed last value. */
function prepare(parser, typescript, code, count) {
  const cellName = `<cell-${count}>`;
  let javascript = code;
  let mapToSource = (line, column) => ({ line, column });
  if (typescript?.needsTranspile(parser, code)) {
    const transpiled = typescript.transpile(code, cellName);
    javascript = transpiled.code;
    mapToSource = transpiled.mapPosition;
  }
  let rewritten;
  try {
    rewritten = rewriteObjectLiteral(parser, javascript) ?? rewriteCell(parser, javascript);
  } catch (error) {
    if (!(error instanceof SyntaxError) || typeof error.pos !== 'number') throw error;
    // Syntax newer than the parser (acorn 8.8) may still be V8's: run such a cell as written.
    let script;
    try {
      script = new vm.Script(javascript, { filename: cellName });
    } catch {
      throw syntaxError(javascript, error.pos, error.message, cellName);
    }
    remember(count, code, mapToSource, Number.POSITIVE_INFINITY);
    return () => Promise.resolve([script.runInThisContext({ breakOnSigint: true })]);
  }
  for (const name of rewritten.declaredNames) {
    if (!Object.hasOwn(globalThis, name)) {
      Object.defineProperty(globalThis, name, {
        value: undefined,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
  }
  let script;
  try {
    script = new vm.Script(rewritten.code, { filename: cellName });
  } catch (error) {
    // A generator cannot name a variable `yield`: such a cell runs as an async function.
    if (!rewritten.stepped) throw error;
    rewritten = rewriteCell(parser, javascript, { stepped: false });
    script = new vm.Script(rewritten.code, { filename: cellName });
  }
  const mapPosition = (line, column) => {
    const position = rewritten.mapPosition(line, column);
    return mapToSource(position.line, position.column);
  };
  remember(count, code, mapPosition, javascript.split('\n').length);
  if (rewritten.stepped) return (abandoned) => driveCell(script.runInThisContext(), abandoned);
  return () => script.runInThisContext({ breakOnSigint: true });
}

/** A cell such as `{ a: 1 }` is an object, as in Node's REPL, when it reads as one. */
function rewriteObjectLiteral(parser, source) {
  if (!/^\s*\{/.test(source) || /;\s*$/.test(source)) return undefined;
  try {
    return rewriteCell(parser, `(${source})`);
  } catch {
    return undefined;
  }
}

function remember(count, source, mapPosition, lineCount) {
  cells.set(count, { source, mapPosition, lineCount });
  if (cells.size > KEPT_CELLS) cells.delete(cells.keys().next().value);
}

/** The cell's top level returned: the execution ends now, or once the event loop is empty when it waits for that. */
function returned(execution, box) {
  if (endsWithLoop !== execution) {
    finish(execution, { box });
    return;
  }
  execution.returned = true;
  execution.box = box;
}

/** Ends an execution once: its result or error, then execution-end. Later outcomes of the same cell are ignored. */
function finish(execution, outcome) {
  if (execution.done) return;
  execution.done = true;
  if (endsWithLoop === execution) {
    endsWithLoop = null;
    channel.ref();
  }
  if ('error' in outcome) emitError(execution, isInterruption(outcome.error) ? new Interrupted() : outcome.error);
  else if (Array.isArray(outcome.box) && outcome.box[0] !== undefined) {
    emit(execution, 'result', { 'text/plain': plainText(outcome.box[0]) }, {});
  }
  channel.send({
    type: 'execution-end',
    id: execution.id,
    status: execution.failed ? 'error' : 'ok',
    executionCount: execution.count,
    outputTruncated: execution.truncated,
  });
  if (current === execution) current = null;
  execution.resolve();
}

/** Whether a vm call ended because of SIGINT (breakOnSigint); a thrown value's getters may throw. */
function isInterruption(error) {
  try {
    return error instanceof Error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
  } catch {
    return false;
  }
}

function emit(execution, type, data, metadata) {
  let size = 0;
  for (const value of Object.values(data)) size += typeof value === 'string' ? value.length : 0;
  if (Object.keys(data).length === 0) return;
  if (execution.resultBytes + size > RESULT_LIMIT) {
    execution.truncated = true;
    return;
  }
  const event = { type, id: execution.id, data, metadata };
  if (type === 'result') event.executionCount = execution.count;
  const line = JSON.stringify(event);
  if (execution.resultBytes + line.length + 1 > RESULT_LIMIT) {
    execution.truncated = true;
    return;
  }
  execution.resultBytes += line.length + 1;
  channel.send(event);
}

function emitError(execution, error) {
  let fields;
  try {
    fields = errorFields(error, cells, OUTPUT_LIMIT);
  } catch {
    // A thrown Proxy or an error whose getters throw: reported without its details.
    fields = { name: 'Error', value: 'a value that could not be read was thrown', traceback: [], cut: false };
  }
  execution.failed = true;
  if (fields.cut) execution.truncated = true;
  channel.send({
    type: 'error',
    id: execution.id,
    name: fields.name,
    value: fields.value,
    traceback: fields.traceback,
  });
}

/** `display(value, metadata?)`, a global of every cell: a MIME bundle (`{ 'text/html': … }`) or any value. */
function display(value, metadata) {
  const { metadata: kept, cut } = boundedMetadata(metadata);
  if (current === null) {
    lateOutput.holdDisplay(displayBundle(value), kept, cut);
    return;
  }
  if (current.done) return;
  if (cut) current.truncated = true;
  emit(current, 'display', displayBundle(value), kept);
}
display.html = (html) => display({ 'text/html': String(html) });
display.markdown = (markdown) => display({ 'text/markdown': String(markdown) });
display.svg = (svg) => display({ 'image/svg+xml': String(svg) });
// Images take bytes (a Buffer, any typed array) or base64 text.
display.png = (image) => display({ 'image/png': image });
display.jpeg = (image) => display({ 'image/jpeg': image });
display.json = (value) => display({ 'application/json': value });

/** An error the cell's own async work threw (a timer, an unawaited promise): the execution's error, or the next one's stderr. */
function reportUncaught(error) {
  if (current !== null) {
    finish(current, { error });
    return;
  }
  let traceback;
  try {
    traceback = errorFields(error, cells, OUTPUT_LIMIT).traceback.join('\n');
  } catch {
    traceback = 'a value that could not be read was thrown';
  }
  lateOutput.holdError(`Uncaught ${traceback}\n`);
}

async function isComplete(code) {
  const parser = await parserReady;
  const lines = code.split('\n');
  const lastLine = lines.findLast((line) => line.trim() !== '') ?? '';
  const indent = lastLine.length - lastLine.trimStart().length + (/[{([]\s*$/.test(lastLine) ? 2 : 0);
  try {
    parser.parse(code, PARSE_OPTIONS);
    return { status: 'complete', indent: 0 };
  } catch (error) {
    const atEnd = error.pos >= code.trimEnd().length || /^Unterminated (template|comment)/.test(error.message);
    if (atEnd) return { status: 'incomplete', indent };
    if (LANGUAGE !== 'typescript') return { status: 'invalid', indent: 0 };
  }
  const status = (await typescriptReady).typescriptCompleteness(code);
  return { status, indent: status === 'incomplete' ? indent : 0 };
}

// Output that a cell's async work makes after its execution ended (a timer's console.log, a late
// display, an error a callback threw) while no execution runs. The supervisor sends fds 1 and 2
// only as output of a running execution and drops what comes between, so it is held here, within
// the per-execution output budget, and written when the next execution starts: it reaches the host
// as the start of that execution's output. Jupyter's JavaScript kernels (ijavascript, Deno) show a
// late callback's output too, rather than lose it.
import { Buffer } from 'node:buffer';
import process from 'node:process';

/** The chunk's bytes, copied (the caller may reuse its buffer once write returns); undefined when it is neither text nor bytes. */
function copyOf(chunk, encoding) {
  if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8');
  if (ArrayBuffer.isView(chunk)) return Buffer.from(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  return undefined;
}

/**
 * Holds what process.stdout and process.stderr are given while `isRunning()` is false.
 * `outputBytes` bounds the held text (both streams), `resultBytes` the held displays; past them
 * the rest is dropped and `release` says so (the next execution's output is marked truncated).
 */
export function holdLateOutput({ isRunning, outputBytes, resultBytes }) {
  /** In order: `{ stream, chunks }` (a run of writes to one stream) or `{ display: [bundle, metadata] }`. */
  let held = [];
  let textBytes = 0;
  let displayBytes = 0;
  let dropped = false;
  const writers = new Map();

  const holdText = (stream, bytes) => {
    const room = outputBytes - textBytes;
    if (bytes.length > room) dropped = true;
    const kept = bytes.length > room ? bytes.subarray(0, Math.max(0, room)) : bytes;
    if (kept.length === 0) return;
    textBytes += kept.length;
    const last = held.at(-1);
    if (last?.stream === stream) last.chunks.push(kept);
    else held.push({ stream, chunks: [kept] });
  };

  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write;
    writers.set(stream, write);
    // An own property of the stream, as code that captures output by replacing `write` expects.
    stream.write = function writeOrHold(...args) {
      if (isRunning() || this !== stream) return write.apply(this, args);
      const [chunk, encoding, callback] = args;
      let bytes;
      try {
        bytes = copyOf(chunk, encoding);
      } catch {
        bytes = undefined;
      }
      // Neither text nor bytes (or an unknown encoding): the stream's own error, as without this.
      if (bytes === undefined) return write.apply(this, args);
      holdText(stream, bytes);
      const done = typeof encoding === 'function' ? encoding : callback;
      if (typeof done === 'function') process.nextTick(done);
      return true;
    };
  }

  return {
    /** Text for stderr between executions (an uncaught error of a callback). */
    holdError(text) {
      holdText(process.stderr, Buffer.from(text));
    },
    /** A display made between executions: its bundle, made now (the value may change later); `cut`: its metadata was. */
    holdDisplay(bundle, metadata, cut) {
      if (cut) dropped = true;
      let size = 0;
      for (const value of Object.values(bundle)) size += typeof value === 'string' ? value.length : 0;
      if (displayBytes + size > resultBytes) {
        dropped = true;
        return;
      }
      displayBytes += size;
      held.push({ display: [bundle, metadata] });
    },
    /**
     * Writes what was held, as the running execution's output (`display(bundle, metadata)` sends a
     * display); true when some of it was dropped.
     */
    release(display) {
      const items = held;
      const wasDropped = dropped;
      held = [];
      textBytes = 0;
      displayBytes = 0;
      dropped = false;
      for (const item of items) {
        if (item.display) display(...item.display);
        else {
          try {
            writers.get(item.stream).call(item.stream, Buffer.concat(item.chunks));
          } catch {
            // The code closed the stream: nowhere left to write it.
          }
        }
      }
      return wasDropped;
    },
  };
}

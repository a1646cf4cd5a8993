// The JavaScript kernel's channel to the supervisor: requests as JSON lines on fd 3, events as
// JSON lines on fd 4 (docs/kernel-protocol.md, "Kernels"). Events are written synchronously, so
// one is on its way before any later output of the cell, and its order with fds 1 and 2 (Node
// writes pipes synchronously on Linux) is the order the code ran in. The user's child processes
// never inherit fds 3 and 4: Node marks the descriptors it inherits close-on-exec at start
// (libuv's uv_disable_stdio_inheritance).
import { Buffer } from 'node:buffer';
import { createReadStream, writeSync } from 'node:fs';
import net from 'node:net';
import process from 'node:process';

const REQUEST_FD = 3;
const EVENT_FD = 4;
// A request larger than this is not one the host sends (code is bounded far below it).
const REQUEST_LINE_LIMIT = 256 << 20;

/** Requests as a stream: a pipe or socket through the event loop; anything else (a file) through reads. */
function openRequests() {
  try {
    return new net.Socket({ fd: REQUEST_FD, readable: true, writable: false });
  } catch (error) {
    if (error.code !== 'ERR_INVALID_FD_TYPE') throw error;
    return createReadStream(null, { fd: REQUEST_FD, autoClose: false });
  }
}

/**
 * Opens the channel: `send(event)` writes one event; `onRequest(request)` hears each request, `onClose()` the end.
 * `unref()` lets the event loop empty while requests are still read (Node then emits 'beforeExit'), `ref()` undoes it.
 */
export function openChannel({ onRequest, onClose }) {
  const wait = new Int32Array(new SharedArrayBuffer(4));

  const send = (event) => {
    const bytes = Buffer.from(`${JSON.stringify(event)}\n`);
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += writeSync(EVENT_FD, bytes, offset);
      } catch (error) {
        if (error.code === 'EAGAIN') Atomics.wait(wait, 0, 0, 1);
        else if (error.code === 'EPIPE' || error.code === 'EBADF')
          process.exit(0); // the supervisor is gone
        else throw error;
      }
    }
  };

  const input = openRequests();
  input.setEncoding('utf8');
  let pending = '';
  input.on('data', (chunk) => {
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim() !== '') dispatch(line);
      newline = pending.indexOf('\n');
    }
    if (pending.length > REQUEST_LINE_LIMIT) {
      pending = '';
      send({ type: 'protocol-error', message: 'request line too long' });
    }
  });
  input.on('end', onClose);
  input.on('error', onClose);

  const dispatch = (line) => {
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      send({ type: 'protocol-error', message: 'invalid JSON request' });
      return;
    }
    if (request === null || typeof request !== 'object') {
      send({ type: 'protocol-error', message: 'a request is a JSON object' });
      return;
    }
    onRequest(request);
  };

  // A file (a test's) has no handle to unref: its end closes the channel anyway.
  return { send, ref: () => input.ref?.(), unref: () => input.unref?.() };
}

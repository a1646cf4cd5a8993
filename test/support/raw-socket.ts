/**
 * Requests as raw bytes on a socket, for what an HTTP client would normalise or refuse to send
 * (a backslash, `..` segments, a 100 KB request line, two conflicting headers): the hostile-request
 * suites write them to a real server and read whatever comes back, a close included.
 */
import net from 'node:net';

export interface RawAnswer {
  /** The status of the first answer, or undefined when the server closed without one. */
  status?: number;
  text: string;
}

export interface SendRawOptions {
  /** End the writing side once the bytes are written (a client that says no more is coming). */
  halfClose?: boolean;
  /** How long to wait for an answer before giving up on it (not an error: the answer is then what came). */
  waitMs?: number;
  /** How many whole answers to read before giving up the connection (1 unless said: pipelined requests get more). */
  answers?: number;
}

export const CRLF = '\r\n';
/** A request head: its lines, and the empty line that ends it. */
export const head = (lines: string[]) => `${lines.join(CRLF)}${CRLF}${CRLF}`;
export const host = (port: number) => `Host: 127.0.0.1:${port}`;

/** Writes `bytes` on a fresh connection and reads what comes back until the server closes or `waitMs` passes. */
export function sendRaw(port: number, bytes: Buffer | string, options: SendRawOptions = {}): Promise<RawAnswer> {
  return new Promise<RawAnswer>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: match ? Number(match[1]) : undefined, text });
    };
    const timer = setTimeout(finish, options.waitMs ?? 1_500);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      // The answers asked for read: the connection may stay open (keep-alive) without anything more to come.
      if (completeAnswers(Buffer.concat(chunks).toString('latin1')) >= (options.answers ?? 1)) finish();
    });
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(bytes, () => {
      if (options.halfClose) socket.end();
    });
  });
}

/** How many whole HTTP answers `text` holds, one after another (each its head, and its body by length or by the last chunk). */
function completeAnswers(text: string): number {
  let count = 0;
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return count;
    const headText = rest.slice(0, end).toLowerCase();
    const body = rest.slice(end + 4);
    let bodyLength: number | undefined;
    if (/^http\/1\.[01] (1\d\d|204|304)/.test(headText)) bodyLength = 0;
    else {
      const length = /\r\ncontent-length: *(\d+)/.exec(headText);
      if (length) bodyLength = Number(length[1]);
      else if (/\r\ntransfer-encoding: *chunked/.test(headText)) {
        const last = body.startsWith('0\r\n\r\n') ? -2 : body.indexOf('\r\n0\r\n\r\n');
        if (last !== -1) bodyLength = last + 7;
      }
    }
    if (bodyLength === undefined || Buffer.byteLength(body, 'latin1') < bodyLength) return count;
    count += 1;
    rest = body.slice(bodyLength);
  }
}

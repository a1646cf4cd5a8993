/**
 * Reads one request head (request line and headers) from a client socket, strictly. The gate
 * parses requests itself rather than through Node's HTTP server so that every ambiguity a
 * smuggling attack relies on is refused here, before anything is forwarded: bare LF line ends,
 * obs-fold continuation lines, malformed names, a head larger than the limit.
 */
import type { Socket } from 'node:net';
import { GateRefusal } from './refusal.js';

/** More header lines than this is not a client we serve. */
export const MAX_HEADER_LINES = 100;

export interface RequestHead {
  method: string;
  target: string;
  version: '1.0' | '1.1';
  /** In the order sent, names as sent. */
  headers: Array<[name: string, value: string]>;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^([A-Z]{1,20}) ([\x21-\x7e]{1,8192}) HTTP\/1\.([01])$/;

/**
 * Resolves with the head and whatever bytes followed it in the same reads; the socket is left
 * paused. Rejects with a `GateRefusal` for a malformed or oversized head, or a plain error when
 * the client went away first.
 */
export function readRequestHead(socket: Socket, maxHeadBytes: number): Promise<{ head: RequestHead; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const finish = (outcome: () => void) => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onEnd);
      socket.off('close', onEnd);
      socket.pause();
      outcome();
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buffered.length > maxHeadBytes) {
          finish(() =>
            reject(new GateRefusal(431, 'head-too-large', `the request head is over ${maxHeadBytes} bytes`)),
          );
        }
        return;
      }
      if (end + 4 > maxHeadBytes) {
        finish(() => reject(new GateRefusal(431, 'head-too-large', `the request head is over ${maxHeadBytes} bytes`)));
        return;
      }
      const rest = buffered.subarray(end + 4);
      finish(() => {
        try {
          resolve({ head: parseHead(buffered.subarray(0, end).toString('latin1')), rest });
        } catch (error) {
          reject(error);
        }
      });
    };
    const onEnd = () => finish(() => reject(new Error('the client closed the connection before a whole request')));
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('error', onEnd);
    // Destroyed by the head timeout: no 'end' comes, only 'close'.
    socket.on('close', onEnd);
    socket.resume();
  });
}

export function parseHead(text: string): RequestHead {
  const lines = text.split('\r\n');
  const requestLine = lines.shift() ?? '';
  const match = REQUEST_LINE.exec(requestLine);
  if (!match) throw badRequest('the request line is not "METHOD target HTTP/1.1"');
  if (lines.length > MAX_HEADER_LINES)
    throw new GateRefusal(431, 'head-too-large', `more than ${MAX_HEADER_LINES} header lines`);
  const headers: Array<[string, string]> = [];
  for (const line of lines) {
    if (line.startsWith(' ') || line.startsWith('\t')) {
      throw new GateRefusal(400, 'smuggling', 'a header line continues the previous one (obs-fold)');
    }
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    if (colon <= 0 || !TOKEN.test(name)) throw new GateRefusal(400, 'smuggling', 'a header line has no valid name');
    const value = line.slice(colon + 1).trim();
    // CR, LF or NUL inside a value means line ends the client and a server may read differently.
    if (/[\0\r\n]/.test(value)) throw new GateRefusal(400, 'smuggling', `the header ${name} holds a control character`);
    headers.push([name, value]);
  }
  return {
    method: match[1] as string,
    target: match[2] as string,
    version: match[3] === '0' ? '1.0' : '1.1',
    headers,
  };
}

/** Every value of a header, by case-insensitive name. */
export function headerValues(head: RequestHead, name: string): string[] {
  const wanted = name.toLowerCase();
  return head.headers.filter(([headerName]) => headerName.toLowerCase() === wanted).map(([, value]) => value);
}

function badRequest(message: string): GateRefusal {
  return new GateRefusal(400, 'bad-request', message);
}

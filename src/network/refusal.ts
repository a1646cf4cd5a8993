/**
 * A request the gate will not carry, and the answer the client gets: a short HTTP response whose
 * body names the rule, so a user reading pip's error sees why and what to allow.
 */
import type { Socket } from 'node:net';

/** Stable names for why a request was refused; they appear in bodies, a header and the log. */
export type RefusalRule =
  | 'host-not-allowed'
  | 'port-not-allowed'
  | 'address-refused'
  | 'address-literal'
  | 'name-not-resolved'
  | 'bad-request'
  | 'smuggling'
  | 'pipelining'
  | 'head-too-large'
  | 'body-unsupported'
  | 'not-a-proxy-request'
  | 'too-many-connections'
  | 'byte-limit'
  | 'upstream-unreachable'
  | 'connect-timeout'
  | 'upstream-certificate'
  | 'misdirected-request'
  | 'secret-needs-https';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  411: 'Length Required',
  421: 'Misdirected Request',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

export class GateRefusal extends Error {
  constructor(
    readonly status: number,
    readonly rule: RefusalRule,
    message: string,
  ) {
    super(message);
    this.name = 'GateRefusal';
  }
}

/** Writes the refusal and ends the connection; nothing the client sent after it is read. */
export function writeRefusal(socket: Socket, refusal: GateRefusal): void {
  if (socket.destroyed || !socket.writable) return;
  const body = `sandcell network gate refused this request (${refusal.rule}): ${refusal.message}\n`;
  const head = [
    `HTTP/1.1 ${refusal.status} ${REASONS[refusal.status] ?? 'Refused'}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Sandcell-Gate-Rule: ${refusal.rule}`,
    'Connection: close',
    '',
    '',
  ].join('\r\n');
  socket.end(head + body);
  // A client that keeps sending is not listened to; end() alone would wait for it to stop.
  socket.setTimeout(5_000, () => socket.destroy());
}

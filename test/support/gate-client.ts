/**
 * A client of a network gate written at the byte level, so tests can send exactly what a
 * well-behaved tool sends (absolute-form GET, CONNECT then TLS) and also what an attacker would
 * (smuggling, pipelining), and read exactly what came back.
 */
import { type AddressInfo, connect, type Socket } from 'node:net';
import tls from 'node:tls';

export interface GateAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function connectToGate(address: string | AddressInfo): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket =
      typeof address === 'string' ? connect({ path: address }) : connect({ host: address.address, port: address.port });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the socket sends until it closes. */
export function readToEnd(socket: Socket): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

export function parseAnswer(raw: Buffer): GateAnswer {
  const text = raw.toString('latin1');
  const headEnd = text.indexOf('\r\n\r\n');
  const headText = headEnd < 0 ? text : text.slice(0, headEnd);
  const [statusLine = '', ...lines] = headText.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: headEnd < 0 ? '' : text.slice(headEnd + 4) };
}

/** Sends `bytes` as they are and reads the gate's whole answer. */
export async function sendRaw(address: string | AddressInfo, bytes: string | Buffer): Promise<GateAnswer> {
  const socket = await connectToGate(address);
  const answer = readToEnd(socket);
  socket.write(bytes);
  return parseAnswer(await answer);
}

/** A plain-HTTP GET through the gate, as curl sends it with `--proxy`. */
export function getThroughGate(
  address: string | AddressInfo,
  url: string,
  headers: Record<string, string> = {},
): Promise<GateAnswer> {
  const host = new URL(url).host;
  const lines = [
    `GET ${url} HTTP/1.1`,
    `Host: ${host}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return sendRaw(address, `${lines.join('\r\n')}\r\n\r\n`);
}

/** CONNECT's own answer: the status, and the socket when the tunnel is open. */
export async function openTunnel(
  address: string | AddressInfo,
  authority: string,
): Promise<{ answer: GateAnswer; socket: Socket }> {
  const socket = await connectToGate(address);
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const head = await new Promise<Buffer>((resolve) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.includes('\r\n\r\n') && parseAnswer(buffered).status === 200) {
        socket.off('data', onData);
        socket.pause();
        resolve(buffered);
      }
    };
    socket.on('data', onData);
    socket.on('close', () => resolve(buffered));
  });
  return { answer: parseAnswer(head), socket };
}

/** An HTTPS GET through the gate: CONNECT, TLS checked against `ca`, then the request. */
export async function httpsThroughGate(
  address: string | AddressInfo,
  options: { host: string; port: number; path: string; ca: string },
): Promise<GateAnswer> {
  const { answer, socket } = await openTunnel(address, `${options.host}:${options.port}`);
  if (answer.status !== 200) return answer;
  const secure = tls.connect({ socket, servername: options.host, ca: options.ca });
  await new Promise<void>((resolve, reject) => {
    secure.once('secureConnect', () => resolve());
    secure.once('error', reject);
  });
  const response = readToEnd(secure as unknown as Socket);
  secure.write(`GET ${options.path} HTTP/1.1\r\nHost: ${options.host}\r\nConnection: close\r\n\r\n`);
  return parseAnswer(await response);
}

/**
 * The limiter on a real HTTP server on 127.0.0.1, with real sockets: a connection that proved a
 * key (here: sent `x-key: yes`) or is being answered is never closed to make room.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionLimiter, type ShedReason } from './connection-limiter.js';

interface RawSocket {
  socket: net.Socket;
  closed: boolean;
  received: string;
}

const servers: http.Server[] = [];
const sockets: RawSocket[] = [];

afterEach(async () => {
  for (const raw of sockets.splice(0)) raw.socket.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function startServer(maxConnections: number, maxConnectionsPerAddress: number) {
  const shed: ShedReason[] = [];
  const limiter = new ConnectionLimiter({ maxConnections, maxConnectionsPerAddress, onShed: (why) => shed.push(why) });
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    if (request.headers['x-key'] === 'yes') limiter.trust(request.socket);
    response.end('ok');
  });
  limiter.attach(server);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, limiter, shed };
}

function open(port: number): Promise<RawSocket> {
  return new Promise((resolve, reject) => {
    const raw: RawSocket = { socket: net.connect({ host: '127.0.0.1', port }), closed: false, received: '' };
    sockets.push(raw);
    raw.socket.on('data', (chunk) => {
      raw.received += chunk.toString();
    });
    raw.socket.on('error', () => undefined);
    raw.socket.on('close', () => {
      raw.closed = true;
    });
    raw.socket.once('connect', () => resolve(raw));
    raw.socket.once('error', reject);
  });
}

/** Sends a keep-alive request on the socket and resolves with the answer's first line. */
async function ask(raw: RawSocket, headers = ''): Promise<string> {
  const before = raw.received.length;
  raw.socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`);
  await until(() => raw.received.length > before && raw.received.endsWith('ok'));
  return raw.received.slice(before).split('\r\n')[0] ?? '';
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('ConnectionLimiter', () => {
  it('keeps a connection that proved a key through a flood, closing idle ones instead', async () => {
    const { port, limiter, shed } = await startServer(5, 5);
    const trusted = await open(port);
    expect(await ask(trusted, 'x-key: yes\r\n')).toBe('HTTP/1.1 200 OK');
    const flood: RawSocket[] = [];
    for (let index = 0; index < 12; index++) flood.push(await open(port));
    await until(() => flood.filter((raw) => raw.closed).length === 8);
    expect(flood.slice(0, 8).every((raw) => raw.closed)).toBe(true);
    expect(trusted.closed).toBe(false);
    expect(await ask(trusted, 'x-key: yes\r\n')).toBe('HTTP/1.1 200 OK');
    expect(limiter.size).toBe(5);
    expect(shed).toEqual(Array(8).fill('connections-per-address'));
  });

  it('refuses a new connection when every open one is trusted', async () => {
    const { port, shed } = await startServer(2, 10);
    const first = await open(port);
    const second = await open(port);
    expect(await ask(first, 'x-key: yes\r\n')).toBe('HTTP/1.1 200 OK');
    expect(await ask(second, 'x-key: yes\r\n')).toBe('HTTP/1.1 200 OK');
    const third = await open(port);
    await until(() => third.closed);
    expect(shed).toEqual(['connections']);
    expect(await ask(first)).toBe('HTTP/1.1 200 OK');
  });
});

/**
 * Servers on 127.0.0.1 that stand in for hosts on the internet: they answer every request with
 * what they received (method, path, headers), so a test sees exactly what a gate forwarded.
 * `/bytes/N` answers N bytes instead.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface StandInServer {
  port: number;
  /** Every request the server received, in order. */
  received: ReceivedRequest[];
  /** Connections accepted, whether or not a request followed. */
  connections(): number;
  close(): Promise<void>;
}

export interface StandInOptions {
  /** Present: HTTPS with this key and certificate. */
  tls?: { key: string; cert: string };
  host?: string;
  port?: number;
  /** Names this server in its answers, to tell two servers apart. */
  label?: string;
}

export async function startStandInServer(options: StandInOptions = {}): Promise<StandInServer> {
  const received: ReceivedRequest[] = [];
  let connections = 0;
  const handler: http.RequestListener = (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      };
      received.push(entry);
      const sized = /^\/bytes\/(\d+)$/.exec(entry.url);
      if (sized) {
        const body = Buffer.alloc(Number(sized[1]), 0x61);
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
        response.end(body);
        return;
      }
      const body = JSON.stringify({ label: options.label ?? 'stand-in', ...entry });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
  };
  const server = options.tls ? https.createServer(options.tls, handler) : http.createServer(handler);
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The Node listener in front of the app, on a real HTTP server on 127.0.0.1: an
 * error nobody mapped is one request's 500 with an id the log also names, and the
 * server goes on serving.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LogCapture } from '../../../test/support/server.js';
import { createRequestListener, REQUEST_ID_HEADER } from './request-listener.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function serve(app: Hono): Promise<{ url: string; logs: LogCapture }> {
  const logs = new LogCapture();
  const listener = createRequestListener(app, { logger: pino(logs), keepAliveHint: 'timeout=5' });
  server = createServer(listener);
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs };
}

describe('the request listener', () => {
  it('answers 500 with the request id to a request whose handling throws outside the app, logs it, and serves the next', async () => {
    const app = new Hono().get('/fine', (c) => c.text('fine'));
    let calls = 0;
    const fetch = app.fetch;
    // The app's own errors go to its onError; this stands for a fault before it (the adapter, a middleware's setup).
    app.fetch = (request, ...rest) => {
      calls++;
      if (new URL(request.url).pathname === '/boom') throw new TypeError('boom from inside');
      return fetch(request, ...rest);
    };
    const { url, logs } = await serve(app);
    const failed = await globalThis.fetch(`${url}/boom`);
    expect(failed.status).toBe(500);
    const id = failed.headers.get(REQUEST_ID_HEADER);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await failed.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('internal-error');
    expect(body.error.message).toContain(String(id));
    expect(body.error.message).not.toContain('boom from inside');
    const logged = logs.lines.find((line) => line.requestId === id);
    expect(logged?.msg).toBe('unexpected error answering a request');
    expect(JSON.stringify(logged?.err)).toContain('boom from inside');
    const fine = await globalThis.fetch(`${url}/fine`);
    expect(await fine.text()).toBe('fine');
    expect(fine.headers.get('keep-alive')).toBe('timeout=5');
    expect(fine.headers.get(REQUEST_ID_HEADER)).not.toBe(id);
    expect(calls).toBe(2);
  });
});

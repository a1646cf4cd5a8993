import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parsePortHost, portAddressOf, portHost, sandboxDomain } from './port-address.js';
import { hostOnlyCookie } from './port-proxy.js';

const requestOf = (headers: Record<string, string>, localPort = 8080) =>
  ({ headers, socket: { localPort } }) as unknown as IncomingMessage;

describe('the port a request is for', () => {
  it('is named by PORT-ID.DOMAIN, the domain the configured one or localhost:PORT of the request’s port', () => {
    expect(sandboxDomain(undefined, 8080)).toBe('localhost:8080');
    expect(sandboxDomain('sandboxes.example.com', 8080)).toBe('sandboxes.example.com');
    expect(portHost(3000, 'abc123', 'localhost:8080')).toBe('3000-abc123.localhost:8080');
    expect(parsePortHost('3000-abc123.localhost:8080', 'localhost:8080')).toEqual({ port: 3000, sandboxId: 'abc123' });
    // Names are case-blind; a domain without a port takes any (a TLS proxy's 443, or none).
    expect(parsePortHost('3000-ABC123.Sandboxes.Example.com', 'sandboxes.example.com')).toEqual({
      port: 3000,
      sandboxId: 'abc123',
    });
    expect(parsePortHost('3000-abc123.sandboxes.example.com:443', 'sandboxes.example.com')).toEqual({
      port: 3000,
      sandboxId: 'abc123',
    });
    expect(parsePortHost('8080-my-session-1.localhost:8080', 'localhost:8080')).toEqual({
      port: 8080,
      sandboxId: 'my-session-1',
    });
  });

  it('is none for the server’s own names, another port of localhost, or what is not PORT-ID', () => {
    for (const host of [
      'localhost:8080',
      '127.0.0.1:8080',
      '3000-abc.localhost:9090',
      '3000-abc.localhost',
      'abc.localhost:8080',
      '0-abc.localhost:8080',
      '70000-abc.localhost:8080',
      '03000-abc.localhost:8080',
      '3000-.localhost:8080',
      '3000-ab_c.localhost:8080',
      '3000-abc.evil.localhost:8080',
      'x.3000-abc.localhost:8080',
      `3000-${'a'.repeat(64)}.localhost:8080`,
      `${'9'.repeat(400)}.localhost:8080`,
    ]) {
      expect(parsePortHost(host, 'localhost:8080'), host).toBeUndefined();
    }
    expect(parsePortHost(undefined, 'localhost:8080')).toBeUndefined();
    expect(portAddressOf(requestOf({ host: 'localhost:8080' }), undefined)).toBeUndefined();
  });

  it('is named by E2B’s headers on the server’s own host, but never for envd’s or the interpreter’s ports', () => {
    const headers = (port: string, id = 'abc123') => ({
      host: 'localhost:8080',
      'e2b-sandbox-id': id,
      'e2b-sandbox-port': port,
    });
    expect(portAddressOf(requestOf(headers('3000')), undefined)).toEqual({
      sandboxId: 'abc123',
      port: 3000,
      via: 'headers',
    });
    expect(portAddressOf(requestOf(headers('49983')), undefined)).toBeUndefined();
    expect(portAddressOf(requestOf(headers('49999')), undefined)).toBeUndefined();
    expect(portAddressOf(requestOf(headers('x')), undefined)).toBeUndefined();
    expect(portAddressOf(requestOf(headers('70000')), undefined)).toBeUndefined();
    // An id that names no sandbox is still port traffic: answered 404, not by the E2B door.
    expect(portAddressOf(requestOf(headers('3000', '../x')), undefined)).toEqual({
      sandboxId: '',
      port: 3000,
      via: 'headers',
    });
    // The host name wins over the headers.
    expect(portAddressOf(requestOf({ ...headers('3000'), host: '5000-other.localhost:8080' }), undefined)).toEqual({
      sandboxId: 'other',
      port: 5000,
      via: 'host',
    });
  });
});

describe('an app’s cookies', () => {
  it('lose their Domain, whatever its case or spacing, and keep every other attribute', () => {
    expect(hostOnlyCookie('a=1; Domain=localhost; Path=/')).toBe('a=1; Path=/');
    expect(hostOnlyCookie('a=1;domain=.example.com;Secure;  DOMAIN = x')).toBe('a=1;Secure');
    expect(hostOnlyCookie('domain=value; Path=/')).toBe('domain=value; Path=/');
    expect(hostOnlyCookie('a=1; HttpOnly; SameSite=Lax')).toBe('a=1; HttpOnly; SameSite=Lax');
  });
});

import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { ApiKeys } from '../core/auth.js';
import { browserGuard } from './browser-guard.js';
import { errorBody, HttpError } from './errors.js';

const KEY = 'guard-test-key-1234';

/** The guard in front of one route that answers 200, errors as the server maps them. */
function guarded(keys: string[], allowedHosts: string[] = []) {
  const app = new Hono();
  const refused: string[] = [];
  app.use(browserGuard({ apiKeys: new ApiKeys(keys), allowedHosts, onRefused: (reason) => refused.push(reason) }));
  app.onError((error, c) => {
    if (!(error instanceof HttpError)) throw error;
    return c.json(errorBody(error), error.status as 400);
  });
  app.all('*', (c) => c.text('ok'));
  const send = async (method: string, headers: Record<string, string>, path = '/v1/sessions') => {
    const response = await app.request(`http://server${path}`, { method, headers });
    return response.status === 200 ? 200 : `${response.status} ${((await response.json()) as ErrorBody).error.code}`;
  };
  return { send, refused };
}

interface ErrorBody {
  error: { code: string };
}

describe('browser guard without keys', () => {
  const { send } = guarded([]);

  it('answers loopback names and addresses in Host, with or without a port', async () => {
    for (const host of [
      'localhost',
      'localhost:8080',
      '127.0.0.1',
      '127.0.0.1:8080',
      '[::1]',
      '[::1]:8080',
      '127.1.2.3',
    ]) {
      expect(await send('GET', { host }), host).toBe(200);
    }
  });

  it('refuses every other name with 421, whatever the method', async () => {
    for (const host of ['rebind.attacker.example:8080', 'localhost.attacker.example', '0.0.0.0:8080', 'localhost.']) {
      expect(await send('GET', { host }), host).toBe('421 host-not-allowed');
      expect(await send('POST', { host }), host).toBe('421 host-not-allowed');
    }
  });

  it('passes requests of its own origin and of clients outside the browser', async () => {
    expect(await send('POST', { host: '127.0.0.1:8080' })).toBe(200);
    const sameOrigin = { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080', 'sec-fetch-site': 'same-origin' };
    expect(await send('POST', sameOrigin)).toBe(200);
    expect(await send('POST', { host: 'localhost', origin: 'http://localhost:80' })).toBe(200);
    expect(await send('DELETE', { host: '[::1]:9000', origin: 'http://[::1]:9000' })).toBe(200);
    expect(await send('POST', { host: '127.0.0.1:8080', 'sec-fetch-site': 'none' })).toBe(200);
  });

  it('refuses other origins, `null`, and cross-site or same-site fetches', async () => {
    const host = '127.0.0.1:8080';
    const cases: Record<string, string>[] = [
      { host, origin: 'http://attacker.example' },
      { host, origin: 'null' },
      { host, origin: 'http://localhost:8080' }, // another origin on this machine is still another page
      { host, origin: 'http://127.0.0.1:3000', 'sec-fetch-site': 'same-site' },
      { host, 'sec-fetch-site': 'cross-site' },
      { host, 'sec-fetch-site': 'same-site' },
      { host, origin: 'https://127.0.0.1' }, // https's default port is 443, not 8080
    ];
    for (const headers of cases) {
      expect(await send('POST', headers), JSON.stringify(headers)).toBe('403 cross-site-request');
    }
    expect(await send('GET', { host, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' })).toBe(
      '403 cross-site-request',
    );
  });

  it('lets a link from another site open the page (a GET navigation), not post a form', async () => {
    const navigation = { host: '127.0.0.1:8080', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' };
    expect(await send('GET', navigation)).toBe(200);
    expect(await send('POST', { ...navigation, origin: 'http://attacker.example' })).toBe('403 cross-site-request');
  });

  it('a key sent to a server without keys proves nothing', async () => {
    const headers = { host: '127.0.0.1:8080', origin: 'http://attacker.example', authorization: `Bearer ${KEY}` };
    expect(await send('POST', headers)).toBe('403 cross-site-request');
  });
});

describe('browser guard and signed links', () => {
  const { send } = guarded([]);
  const host = '127.0.0.1:8080';
  const page = { host, origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' };
  const signed = `/files?path=notes.txt&signature=v1_${'A'.repeat(42)}k&signature_expiration=1700000000`;

  it('passes E2B signed file URLs from any site, to download or upload: the signature is their credential', async () => {
    expect(await send('GET', page, signed)).toBe(200);
    expect(await send('HEAD', page, signed)).toBe(200);
    expect(await send('POST', page, signed)).toBe(200);
    expect(await send('GET', page, '/v1/outputs/some-token')).toBe(200);
  });

  it('refuses what only resembles one, other methods, and foreign names (DNS rebinding)', async () => {
    expect(await send('POST', page, '/files?path=notes.txt')).toBe('403 cross-site-request');
    expect(await send('POST', page, '/files?path=notes.txt&signature=v1_short')).toBe('403 cross-site-request');
    expect(await send('POST', page, `/e2b${signed}`)).toBe('403 cross-site-request');
    expect(await send('PUT', page, signed)).toBe('403 cross-site-request');
    expect(await send('DELETE', page, signed)).toBe('403 cross-site-request');
    expect(await send('POST', page, '/v1/outputs/some-token')).toBe('403 cross-site-request');
    expect(await send('GET', { ...page, host: 'rebind.attacker.example:8080' }, signed)).toBe('421 host-not-allowed');
  });
});

describe('browser guard with allowed hosts', () => {
  const { send, refused } = guarded([], ['sandcell.proxy.example', '[fd00::1]']);

  it('answers the allowed names besides loopback, and their pages', async () => {
    expect(await send('GET', { host: 'sandcell.proxy.example' })).toBe(200);
    expect(await send('GET', { host: 'SANDCELL.proxy.example:8443' })).toBe(200);
    expect(await send('GET', { host: '[fd00::1]:8080' })).toBe(200);
    expect(await send('GET', { host: 'other.proxy.example' })).toBe('421 host-not-allowed');
    // A TLS proxy that forwards to 127.0.0.1 and keeps the browser's Origin.
    expect(await send('POST', { host: '127.0.0.1:8080', origin: 'https://sandcell.proxy.example' })).toBe(200);
    expect(await send('POST', { host: 'sandcell.proxy.example', origin: 'https://sandcell.proxy.example' })).toBe(200);
    expect(refused).toEqual(['host-not-allowed']);
  });
});

describe('browser guard with keys', () => {
  it('does not restrict Host unless names are allowed; a valid key passes any origin', async () => {
    const { send } = guarded([KEY]);
    const foreign = { host: 'sandcell.internal:8080', origin: 'http://attacker.example' };
    expect(await send('GET', { host: 'sandcell.internal:8080' })).toBe(200);
    expect(await send('POST', { ...foreign, authorization: `Bearer ${KEY}` })).toBe(200);
    expect(await send('POST', { ...foreign, 'api-key': KEY })).toBe(200);
    expect(await send('POST', foreign)).toBe('403 cross-site-request');
    expect(await send('POST', { ...foreign, authorization: 'Bearer wrong-key-5678' })).toBe('403 cross-site-request');
  });

  it('with allowed names, checks Host for every request, keyed or not', async () => {
    const { send } = guarded([KEY], ['sandcell.example.com']);
    expect(await send('GET', { host: 'sandcell.example.com', authorization: `Bearer ${KEY}` })).toBe(200);
    expect(await send('GET', { host: '10.1.2.3:8080', authorization: `Bearer ${KEY}` })).toBe('421 host-not-allowed');
    expect(await send('GET', { host: 'localhost:8080' })).toBe(200);
  });
});

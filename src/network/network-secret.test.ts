import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { resolveNetworkOption } from './network-option.js';
import { MAX_NETWORK_SECRETS, mergeSecrets } from './network-secret.js';
import { parseNetworkPolicy } from './policy.js';

const VALUE = 'Bearer sk-never-in-an-error';

describe('network secrets on the network option', () => {
  it('keeps a secret for a host the allow-list covers, by name or wildcard, host lower-cased', () => {
    expect(
      resolveNetworkOption({
        allow: ['api.example.com', '*.models.example'],
        secrets: [
          { host: 'API.example.com', header: 'Authorization', value: VALUE },
          { host: 'eu.models.example', header: 'X-Api-Key', value: 'k' },
        ],
      })?.secrets,
    ).toEqual([
      { host: 'api.example.com', header: 'Authorization', value: VALUE },
      { host: 'eu.models.example', header: 'X-Api-Key', value: 'k' },
    ]);
  });

  it('refuses a host outside the allow-list, a framing header, a bad value, repeats and too many; never naming the value', () => {
    const secret = (fields: Record<string, unknown>) => ({
      host: 'api.example.com',
      header: 'Authorization',
      value: VALUE,
      ...fields,
    });
    const refused = [
      [secret({ host: 'elsewhere.example.com' })],
      [secret({ host: '*.example.com' })],
      [secret({ host: 'api.example.com:443' })],
      [secret({ host: '10.0.0.1' })],
      [secret({ header: 'Host' })],
      [secret({ header: 'Content-Length' })],
      [secret({ header: 'Proxy-Authorization' })],
      [secret({ header: 'Bad Header' })],
      [secret({ value: `${VALUE}\r\nX-Injected: 1` })],
      [secret({ value: '' })],
      [secret({ value: 'x'.repeat(8 * 1024 + 1) })],
      [secret({}), secret({ header: 'authorization' })],
      Array.from({ length: MAX_NETWORK_SECRETS + 1 }, (_, index) => secret({ header: `X-Key-${index}` })),
      'not a list',
    ];
    for (const secrets of refused) {
      let thrown: unknown;
      try {
        resolveNetworkOption({ allow: ['api.example.com'], secrets: secrets as never });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(secrets).slice(0, 80)).toBeInstanceOf(InvalidInputError);
      expect((thrown as Error).message).not.toContain('never-in-an-error');
    }
  });

  it("merges the operator's secrets for the hosts a session may reach, the operator's winning", () => {
    const policy = parseNetworkPolicy(['api.example.com']);
    const own = [{ host: 'api.example.com', header: 'Authorization', value: 'own' }];
    const operator = [
      { host: 'api.example.com', header: 'authorization', value: 'operator' },
      { host: 'other.example.com', header: 'Authorization', value: 'not for this session' },
    ];
    expect(mergeSecrets(own, operator, policy)).toEqual([operator[0]]);
  });
});

import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { MAX_ALLOW_RULES, resolveNetworkOption } from './network-option.js';

describe('resolveNetworkOption', () => {
  it("means no network when absent or 'none'", () => {
    expect(resolveNetworkOption(undefined)).toBeUndefined();
    expect(resolveNetworkOption('none')).toBeUndefined();
  });

  it('keeps an allow-list, trimmed, lower-cased and without repeats', () => {
    expect(resolveNetworkOption({ allow: [' PyPI.org ', 'pypi.org', '*.example.com:8443', '10.0.0.0/8'] })).toEqual({
      allow: ['pypi.org', '*.example.com:8443', '10.0.0.0/8'],
    });
  });

  it('refuses what is not a rule, an empty list, too many rules and certificates that are not PEM', () => {
    const refused = [
      'all',
      { allow: [] },
      { allow: ['https://pypi.org/simple'] },
      { allow: ['pypi.org; rm -rf /'] },
      { allow: [42] },
      { allow: Array.from({ length: MAX_ALLOW_RULES + 1 }, (_, index) => `host${index}.example.com`) },
      { allow: ['pypi.org'], trustedCertificates: 'not a certificate' },
    ];
    for (const option of refused) {
      expect(() => resolveNetworkOption(option as never), JSON.stringify(option).slice(0, 60)).toThrow(
        InvalidInputError,
      );
    }
  });

  it("refuses a rule on the sandbox's own loopback, naming host.sandcell.internal instead", () => {
    expect(() => resolveNetworkOption({ allow: ['127.0.0.1:18081'] })).toThrow(
      /"127\.0\.0\.1:18081": inside a sandbox, 127\.0\.0\.1 is the sandbox itself.*allow host\.sandcell\.internal:18081 and use http:\/\/host\.sandcell\.internal:18081\//,
    );
    expect(resolveNetworkOption({ allow: ['host.sandcell.internal:18081'] })).toEqual({
      allow: ['host.sandcell.internal:18081'],
    });
  });
});

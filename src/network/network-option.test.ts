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
});

import { describe, expect, it } from 'vitest';
import { GateRefusal } from './refusal.js';
import { parseAbsoluteTarget, parseAuthority } from './request-target.js';

describe('parseAuthority', () => {
  it('reads names, dotted IPv4 and bracketed IPv6, in lower case', () => {
    expect(parseAuthority('PyPI.org:443')).toEqual({
      host: 'pypi.org',
      port: 443,
      literal: false,
      authority: 'pypi.org:443',
    });
    expect(parseAuthority('10.0.0.1:8080')).toMatchObject({ host: '10.0.0.1', literal: true });
    expect(parseAuthority('[2001:DB8::1]:443')).toMatchObject({ host: '2001:db8::1', port: 443, literal: true });
    expect(parseAuthority('example.com', 80)).toMatchObject({ port: 80, authority: 'example.com' });
  });

  it.each([
    'pypi.org',
    'pypi.org:0',
    'pypi.org:99999',
    '2001:db8::1:443',
    '[::1',
    '[pypi.org]:443',
    'pypi.org:443:1',
    'py%70i.org:443',
    ':443',
  ])('refuses %j for CONNECT', (authority) => {
    expect(() => parseAuthority(authority)).toThrow(GateRefusal);
  });
});

describe('parseAbsoluteTarget', () => {
  it('splits an absolute http URL into destination and origin form', () => {
    expect(parseAbsoluteTarget('http://example.com/simple/?a=1')).toMatchObject({
      destination: { host: 'example.com', port: 80, authority: 'example.com' },
      originForm: '/simple/?a=1',
    });
    expect(parseAbsoluteTarget('http://example.com:8080?x').originForm).toBe('/?x');
    expect(parseAbsoluteTarget('HTTP://example.com').originForm).toBe('/');
  });

  it.each([
    ['https://example.com/', 'CONNECT'],
    ['/relative', 'forward proxy'],
    ['http://user:pass@example.com/', 'user information'],
    ['http://example.com/#top', 'fragment'],
    ['http://exa_mple..com/', 'not a host name'],
  ])('refuses %s', (target, message) => {
    expect(() => parseAbsoluteTarget(target)).toThrow(message);
  });
});

import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import {
  cidrRuleFor,
  NetworkPolicyError,
  nameRuleFor,
  parseNetworkPolicy,
  portsForName,
  refuseHostLocalRules,
} from './policy.js';

describe('parseNetworkPolicy', () => {
  it('reads names, wildcards and CIDRs, with 80 and 443 unless a port is named', () => {
    const policy = parseNetworkPolicy([
      'PyPI.org',
      '*.example.com',
      'api.example.net:8443',
      '10.0.0.0/8',
      '[2001:db8::1]:443',
    ]);
    expect(policy.rules.map((rule) => [rule.kind, rule.ports])).toEqual([
      ['name', [80, 443]],
      ['suffix', [80, 443]],
      ['name', [8443]],
      ['cidr', [80, 443]],
      ['cidr', [443]],
    ]);
  });

  it.each([
    ['', 'empty'],
    ['pypi.org:0', 'port'],
    ['pypi.org:65536', 'port'],
    ['pypi.org:http', 'port'],
    ['*.com', 'two labels'],
    ['*', 'not a valid host name'],
    ['foo.*.com', 'not a valid host name'],
    ['10.0.0.1/8', 'bits set'],
    ['10.0.0.0/33', 'not a valid CIDR or address'],
    ['127.1', 'address in a form'],
    ['0x7f000001', 'address in a form'],
    ['exa mple.com', 'not a valid host name'],
    ['[::1', 'unclosed'],
    ['pypi.org/simple/', 'without a scheme or a path'],
    ['10.0.0.0/8/9', 'without a scheme or a path'],
    ['http://pypi.org', 'without a scheme'],
    ['host.sandcell.internal', 'host.sandcell.internal:11434'],
  ])('refuses %j with a typed error that says why', (entry, reason) => {
    const attempt = () => parseNetworkPolicy([entry]);
    expect(attempt).toThrow(NetworkPolicyError);
    expect(attempt).toThrow(InvalidInputError);
    expect(attempt).toThrow(reason);
  });

  it('refuses an absurdly long list', () => {
    expect(() => parseNetworkPolicy(Array.from({ length: 257 }, (_, index) => `h${index}.example.com`))).toThrow(
      'at most 256',
    );
  });
});

describe('matching', () => {
  const policy = parseNetworkPolicy([
    'pypi.org',
    '*.example.com',
    'api.example.net:8443',
    '10.0.0.0/8:5432',
    '2001:db8::/32',
  ]);

  it('matches exact names on their ports only', () => {
    expect(nameRuleFor(policy, 'pypi.org', 443)?.text).toBe('pypi.org');
    expect(nameRuleFor(policy, 'pypi.org', 22)).toBeUndefined();
    expect(nameRuleFor(policy, 'files.pypi.org', 443)).toBeUndefined();
    expect(nameRuleFor(policy, 'api.example.net', 8443)?.text).toBe('api.example.net:8443');
    expect(nameRuleFor(policy, 'api.example.net', 443)).toBeUndefined();
    expect(portsForName(policy, 'api.example.net')).toEqual([8443]);
  });

  it('matches a wildcard below its domain, not the domain itself nor a look-alike', () => {
    expect(nameRuleFor(policy, 'a.b.example.com', 80)?.kind).toBe('suffix');
    expect(nameRuleFor(policy, 'example.com', 443)).toBeUndefined();
    expect(nameRuleFor(policy, 'badexample.com', 443)).toBeUndefined();
  });

  it('matches addresses by CIDR and port', () => {
    expect(cidrRuleFor(policy, '10.1.2.3', 5432)?.text).toBe('10.0.0.0/8:5432');
    expect(cidrRuleFor(policy, '10.1.2.3', 443)).toBeUndefined();
    expect(cidrRuleFor(policy, '11.0.0.1', 5432)).toBeUndefined();
    expect(cidrRuleFor(policy, '2001:db8:ffff::1', 443)?.kind).toBe('cidr');
    expect(cidrRuleFor(policy, '2001:db9::1', 443)).toBeUndefined();
    // An IPv4-mapped form is not the IPv4 address for a rule: it is refused, never silently widened.
    expect(cidrRuleFor(policy, '::ffff:10.1.2.3', 5432)).toBeUndefined();
  });
});

describe("this host's loopback", () => {
  it('is host.sandcell.internal on the ports named, matched by the exact name only', () => {
    const policy = parseNetworkPolicy([
      'host.sandcell.internal:11434',
      '*.sandcell.internal',
      '*.sandcell.internal:8080',
    ]);
    expect(nameRuleFor(policy, 'host.sandcell.internal', 11434)?.text).toBe('host.sandcell.internal:11434');
    expect(nameRuleFor(policy, 'host.sandcell.internal', 443)).toBeUndefined();
    expect(nameRuleFor(policy, 'host.sandcell.internal', 8080)).toBeUndefined();
    expect(portsForName(policy, 'host.sandcell.internal')).toEqual([11434]);
    expect(nameRuleFor(policy, 'other.sandcell.internal', 443)?.kind).toBe('suffix');
  });

  it.each([
    ['127.0.0.1:18081', '127.0.0.1', 'host.sandcell.internal:18081'],
    ['127.0.0.1/32:18081', '127.0.0.1/32', 'host.sandcell.internal:18081'],
    ['localhost:11434', 'localhost', 'host.sandcell.internal:11434'],
    ['LocalHost:11434', 'localhost', 'host.sandcell.internal:11434'],
    ['[::1]:5432', '::1', 'host.sandcell.internal:5432'],
    ['::1', '::1', 'host.sandcell.internal:PORT'],
    ['127.0.0.0/8:5432', '127.0.0.0/8', 'host.sandcell.internal:5432'],
    ['0.0.0.0:8000', '0.0.0.0', 'host.sandcell.internal:8000'],
    ['[::ffff:127.0.0.1]:8000', '::ffff:127.0.0.1', 'host.sandcell.internal:8000'],
    ['app.localhost:3000', 'app.localhost', 'host.sandcell.internal:3000'],
    ['127.0.0.1', '127.0.0.1', 'host.sandcell.internal:PORT'],
  ])("refuses %j in a session's list (%s is the sandbox itself), naming %s instead", (entry, host, instead) => {
    const policy = parseNetworkPolicy([entry]);
    const attempt = () => refuseHostLocalRules(policy);
    expect(attempt).toThrow(NetworkPolicyError);
    expect(attempt).toThrow(`allow ${instead}`);
    expect(attempt).toThrow(`inside a sandbox, ${host} is the sandbox itself`);
  });

  it('keeps rules that only cover the loopback among other addresses (the gate never opens it through them)', () => {
    expect(() =>
      refuseHostLocalRules(parseNetworkPolicy(['0.0.0.0/0:5432', '::/0', '10.0.0.0/8', 'host.sandcell.internal:80'])),
    ).not.toThrow();
  });
});

import { describe, expect, it } from 'vitest';
import { cidrContains, mappedIPv4, parseAddress, parseCidr } from './ip-address.js';

const hex = (bytes: Uint8Array | undefined) => (bytes ? Buffer.from(bytes).toString('hex') : undefined);

describe('parseAddress', () => {
  it('reads dotted IPv4 and every IPv6 text form', () => {
    expect(hex(parseAddress('192.168.1.20'))).toBe('c0a80114');
    expect(hex(parseAddress('::1'))).toBe('00000000000000000000000000000001');
    expect(hex(parseAddress('::'))).toBe('00000000000000000000000000000000');
    expect(hex(parseAddress('2001:db8::8:1'))).toBe('20010db8000000000000000000080001');
    expect(hex(parseAddress('::ffff:127.0.0.1'))).toBe('00000000000000000000ffff7f000001');
    expect(hex(parseAddress('1:2:3:4:5:6:7:8'))).toBe('00010002000300040005000600070008');
  });

  it('is not fooled by shorthand and other forms a browser would accept', () => {
    for (const text of [
      '127.1',
      '0177.0.0.1',
      '0x7f.0.0.1',
      '2130706433',
      '01.2.3.4',
      'fe80::1%eth0',
      'localhost',
      '1::2::3',
    ]) {
      expect(parseAddress(text), text).toBeUndefined();
    }
  });

  it('finds the IPv4 address inside an IPv4-mapped IPv6 address', () => {
    expect(hex(mappedIPv4(parseAddress('::ffff:169.254.169.254') as Uint8Array))).toBe('a9fea9fe');
    expect(mappedIPv4(parseAddress('::169.254.169.254') as Uint8Array)).toBeUndefined();
    expect(mappedIPv4(parseAddress('10.0.0.1') as Uint8Array)).toBeUndefined();
  });
});

describe('cidrContains', () => {
  const contains = (cidr: string, address: string) =>
    cidrContains(parseCidr(cidr) ?? expect.fail(cidr), parseAddress(address) ?? expect.fail(address));

  it('checks whole and partial bytes of the prefix', () => {
    expect(contains('10.0.0.0/8', '10.255.0.1')).toBe(true);
    expect(contains('10.0.0.0/8', '11.0.0.1')).toBe(false);
    expect(contains('100.64.0.0/10', '100.127.255.255')).toBe(true);
    expect(contains('100.64.0.0/10', '100.128.0.0')).toBe(false);
    expect(contains('0.0.0.0/0', '8.8.8.8')).toBe(true);
    expect(contains('127.0.0.1', '127.0.0.1')).toBe(true);
    expect(contains('127.0.0.1', '127.0.0.2')).toBe(false);
    expect(contains('fe80::/10', 'febf::1')).toBe(true);
    expect(contains('fe80::/10', 'fec0::1')).toBe(false);
  });

  it('never matches across families', () => {
    expect(contains('0.0.0.0/0', '::1')).toBe(false);
    expect(contains('::/0', '127.0.0.1')).toBe(false);
  });
});

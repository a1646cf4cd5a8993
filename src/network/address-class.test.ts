import { describe, expect, it } from 'vitest';
import { classifyAddress, currentHostAddresses, hostAddressSet } from './address-class.js';

const noHost = hostAddressSet([]);

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['fd00::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['100.100.100.200', 'shared-carrier'],
    ['224.0.0.251', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:8.8.8.8', 'ipv4-mapped'],
    ['::127.0.0.1', 'ipv4-mapped'],
    ['64:ff9b::a9fe:a9fe', 'ipv6-translated'],
    ['2002:a9fe:a9fe::1', 'ipv6-translated'],
    ['localhost', 'not-an-address'],
    ['127.1', 'not-an-address'],
  ])('refuses %s as %s', (address, addressClass) => {
    expect(classifyAddress(address, noHost)).toBe(addressClass);
  });

  it.each(['8.8.8.8', '151.101.0.223', '172.32.0.1', '2a04:4e42::223', '100.128.0.1'])(
    'lets the public address %s through',
    (address) => {
      expect(classifyAddress(address, noHost)).toBeUndefined();
    },
  );

  it("refuses this host's own public addresses, however they are spelled", () => {
    const host = hostAddressSet(['203.0.114.7', '2a01:4f8::7']);
    expect(classifyAddress('203.0.114.7', host)).toBe('this-host');
    expect(classifyAddress('2a01:04f8:0000::0007', host)).toBe('this-host');
    expect(classifyAddress('203.0.114.8', host)).toBeUndefined();
  });

  it("reads the host's interfaces by default", () => {
    expect(currentHostAddresses().size).toBeGreaterThan(0);
    expect(classifyAddress('127.0.0.1')).toBe('loopback');
  });
});

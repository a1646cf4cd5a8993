import { describe, expect, it } from 'vitest';
import { isAllowed, mayApprove } from './access-policy.js';

const open = { guilds: [], channels: [], roles: [] };
const analyst = { id: '900', name: 'analyst' };

describe('isAllowed', () => {
  it('allows everything without rules, DMs included', () => {
    expect(isAllowed(open, { guildId: '1', channelId: '2', roles: [] })).toBe(true);
    expect(isAllowed(open, { channelId: '3', roles: [] })).toBe(true);
  });

  it('limits guilds, and refuses DMs when guilds are limited', () => {
    const rules = { ...open, guilds: ['1'] };
    expect(isAllowed(rules, { guildId: '1', channelId: '2', roles: [] })).toBe(true);
    expect(isAllowed(rules, { guildId: '7', channelId: '2', roles: [] })).toBe(false);
    expect(isAllowed(rules, { channelId: '3', roles: [] })).toBe(false);
  });

  it('limits channels, a thread counting as its parent channel', () => {
    const rules = { ...open, channels: ['2'] };
    expect(isAllowed(rules, { guildId: '1', channelId: '2', roles: [] })).toBe(true);
    expect(isAllowed(rules, { guildId: '1', channelId: '55', parentChannelId: '2', roles: [] })).toBe(true);
    expect(isAllowed(rules, { guildId: '1', channelId: '56', parentChannelId: '9', roles: [] })).toBe(false);
  });

  it('limits roles by id or by name', () => {
    expect(isAllowed({ ...open, roles: ['analyst'] }, { guildId: '1', channelId: '2', roles: [analyst] })).toBe(true);
    expect(isAllowed({ ...open, roles: ['900'] }, { guildId: '1', channelId: '2', roles: [analyst] })).toBe(true);
    expect(isAllowed({ ...open, roles: ['admin'] }, { guildId: '1', channelId: '2', roles: [analyst] })).toBe(false);
    expect(isAllowed({ ...open, roles: ['analyst'] }, { channelId: '3', roles: [] })).toBe(false);
  });
});

describe('mayApprove', () => {
  it('lets the asker approve, and others only with an approver role', () => {
    expect(mayApprove('alice', 'alice', [], [])).toBe(true);
    expect(mayApprove('alice', 'bob', [analyst], [])).toBe(false);
    expect(mayApprove('alice', 'bob', [analyst], ['analyst'])).toBe(true);
    expect(mayApprove('alice', 'bob', [], ['analyst'])).toBe(false);
  });
});

import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { ApiKeys, LOCAL_OWNER } from './auth.js';
import { HttpError } from './errors.js';
import { isLoopback, resolveServerOptions } from './options.js';

describe('server options', () => {
  it('reads defaults from the environment, flags first', () => {
    const environment = {
      SANDCELL_PORT: '9000',
      SANDCELL_MAX_SESSIONS: '300',
      SANDCELL_EXECUTIONS_PER_MINUTE: '0',
      SANDCELL_PRELOAD: 'none',
    };
    const resolved = resolveServerOptions({}, environment);
    expect(resolved).toMatchObject({ port: 9000, maxSessions: 300, preloadModules: [], host: '127.0.0.1' });
    expect(resolved.limits.executionsPerMinute).toBe(0);
    expect(resolveServerOptions({ port: 1234 }, environment).port).toBe(1234);
  });

  it('refuses nonsense with the name of the option', () => {
    expect(() => resolveServerOptions({ maxSessions: 0 }, {})).toThrow(/maxSessions/);
    expect(() => resolveServerOptions({}, { SANDCELL_PORT: 'eighty' })).toThrow(/SANDCELL_PORT/);
    expect(() => resolveServerOptions({ limits: { maxSessions: 1.5 } }, {})).toThrow(InvalidInputError);
  });

  it('takes the data budget from the option, else SANDCELL_DATA_BUDGET_BYTES, else half of the memory', () => {
    expect(resolveServerOptions({ dataBudgetBytes: 64 << 20 }, {}).dataBudgetBytes).toBe(64 << 20);
    expect(resolveServerOptions({}, { SANDCELL_DATA_BUDGET_BYTES: String(32 << 20) }).dataBudgetBytes).toBe(32 << 20);
    const half = resolveServerOptions({}, {}).dataBudgetBytes;
    expect(Math.abs(half - os.totalmem() / 2)).toBeLessThan(4096);
    expect(() => resolveServerOptions({ dataBudgetBytes: 100 }, {})).toThrow(/dataBudgetBytes/);
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', '::1', '[::1]']) expect(isLoopback(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.2', '10.0.0.1', 'example.com'])
      expect(isLoopback(host)).toBe(false);
  });
});

describe('API keys', () => {
  it('maps each key to its own owner and refuses others', () => {
    const keys = new ApiKeys(['team:first-key-123', 'second-key-456']);
    const team = keys.authenticate('Bearer first-key-123');
    expect(team.label).toBe('team');
    const second = keys.authenticate('bearer second-key-456');
    expect(second.id).not.toBe(team.id);
    expect(second.label).toMatch(/^key-[0-9a-f]{8}$/);
    expect(keys.authenticate(undefined, 'first-key-123')).toEqual(team);
    expect(() => keys.authenticate('Bearer nope')).toThrow(HttpError);
    expect(() => keys.authenticate(undefined)).toThrow(/Authorization: Bearer/);
    expect(JSON.stringify(team)).not.toContain('first-key-123');
  });

  it('without keys everyone is the local owner', () => {
    expect(new ApiKeys([]).authenticate('Bearer anything')).toBe(LOCAL_OWNER);
  });

  it('refuses two keys with one name', () => {
    expect(() => new ApiKeys(['a:key-one-1234', 'a:key-two-1234'])).toThrow(InvalidInputError);
  });
});

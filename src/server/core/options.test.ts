import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../errors.js';
import { DEFAULT_IDLE_TIMEOUT_MS } from '../../session/pool.js';
import { HttpError } from '../http/errors.js';
import { ApiKeys, LOCAL_OWNER } from './auth.js';
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

  it("closes idle sessions after the pool's default idle timeout, which owns idle reaping", () => {
    expect(resolveServerOptions({}, {}).idleTimeoutMs).toBe(DEFAULT_IDLE_TIMEOUT_MS);
    expect(DEFAULT_IDLE_TIMEOUT_MS).toBe(20 * 60_000); // as `sandcell serve --help` and the README say
  });

  it('sizes the pool by demand up to poolMax (8 by default), or keeps exactly poolSize when they are equal (0 included)', () => {
    expect(resolveServerOptions({}, {})).toMatchObject({ poolSize: 2, poolMax: 8 });
    expect(resolveServerOptions({ poolSize: 12 }, {}).poolMax).toBe(12);
    // No warm sessions asked for: none by demand either, unless poolMax says so.
    expect(resolveServerOptions({ poolSize: 0 }, {}).poolMax).toBe(0);
    expect(resolveServerOptions({ poolSize: 0, poolMax: 4 }, {}).poolMax).toBe(4);
    expect(resolveServerOptions({}, { SANDCELL_POOL_MAX: '2' }).poolMax).toBe(2);
    // Callers who find nothing warm get sessions without the preload unless asked otherwise.
    expect(resolveServerOptions({}, {}).preloadWhenBehind).toBe(false);
    expect(resolveServerOptions({}, { SANDCELL_PRELOAD_WHEN_BEHIND: '1' }).preloadWhenBehind).toBe(true);
    expect(
      resolveServerOptions({ preloadWhenBehind: false }, { SANDCELL_PRELOAD_WHEN_BEHIND: '1' }).preloadWhenBehind,
    ).toBe(false);
    expect(resolveServerOptions({ poolMax: 20 }, { SANDCELL_POOL_MAX: '2' }).poolMax).toBe(20);
    expect(() => resolveServerOptions({ poolSize: 4, poolMax: 3 }, {})).toThrow(/--pool-max.*at least.*4/);
  });

  it('refuses nonsense with the name of the option', () => {
    expect(() => resolveServerOptions({ maxSessions: 0 }, {})).toThrow(/maxSessions/);
    expect(() => resolveServerOptions({}, { SANDCELL_PORT: 'eighty' })).toThrow(/SANDCELL_PORT/);
    expect(() => resolveServerOptions({ limits: { maxSessions: 1.5 } }, {})).toThrow(InvalidInputError);
  });

  it('reads the browser and resource limits from the environment, flags first', () => {
    const environment = {
      SANDCELL_ALLOWED_HOSTS: 'Sandcell.Example.com, ::1',
      SANDCELL_MAX_CONNECTIONS: '100',
      SANDCELL_MAX_CONNECTIONS_PER_ADDRESS: '10',
      SANDCELL_HEADERS_TIMEOUT_MS: '2000',
      SANDCELL_MAX_QUEUED_EXECUTIONS: '0',
      SANDCELL_MCP_SESSIONS_PER_KEY: '2',
    };
    const resolved = resolveServerOptions({}, environment);
    expect(resolved).toMatchObject({
      allowedHosts: ['sandcell.example.com', '[::1]'],
      maxConnections: 100,
      maxConnectionsPerAddress: 10,
      headersTimeoutMs: 2000,
    });
    expect(resolved.limits).toMatchObject({ maxQueuedExecutions: 0, maxMcpSessions: 2 });
    expect(resolveServerOptions({ allowedHosts: [] }, environment).allowedHosts).toEqual([]);
    expect(resolveServerOptions({}, {})).toMatchObject({
      allowedHosts: [],
      maxConnections: 1024,
      maxConnectionsPerAddress: 256,
      headersTimeoutMs: 10_000,
      limits: { maxQueuedExecutions: 16, maxMcpSessions: 16 },
    });
  });

  it('reads sizes and durations from the environment as the flags take them; the old …_MS names keep milliseconds', () => {
    const resolved = resolveServerOptions(
      {},
      {
        SANDCELL_MAX_UPLOAD_BYTES: '256M',
        SANDCELL_MAX_REQUEST_BYTES: '4M',
        SANDCELL_DATA_BUDGET_BYTES: '2G',
        SANDCELL_HEADERS_TIMEOUT: '5s',
        SANDCELL_MAX_EXECUTION_TIME: '15m',
        SANDCELL_EXECUTION_TIMEOUT: '90',
        SANDCELL_IDLE_TIMEOUT: '1h',
      },
    );
    expect(resolved.limits).toMatchObject({
      maxUploadBytes: 256 * 1024 ** 2,
      maxRequestBytes: 4 * 1024 ** 2,
      maxExecutionMs: 15 * 60_000,
    });
    expect(resolved).toMatchObject({
      dataBudgetBytes: 2 * 1024 ** 3,
      headersTimeoutMs: 5000,
      executionTimeoutMs: 90_000,
      idleTimeoutMs: 3_600_000,
    });
    // A configuration written for the old names means what it meant; the new name wins when both are set.
    const legacy = {
      SANDCELL_IDLE_TIMEOUT_MS: '600000',
      SANDCELL_MAX_EXECUTION_MS: '30s',
      SANDCELL_HEADERS_TIMEOUT_MS: '2000',
    };
    expect(resolveServerOptions({}, legacy)).toMatchObject({
      idleTimeoutMs: 600_000,
      headersTimeoutMs: 2000,
      limits: { maxExecutionMs: 30_000 },
    });
    expect(resolveServerOptions({}, { ...legacy, SANDCELL_IDLE_TIMEOUT: '5m' }).idleTimeoutMs).toBe(300_000);
    expect(() => resolveServerOptions({}, { SANDCELL_IDLE_TIMEOUT: 'soon' })).toThrow(
      'SANDCELL_IDLE_TIMEOUT takes a duration such as 30s, 5m or 1h (a bare number is seconds); got "soon".',
    );
    expect(() => resolveServerOptions({}, { SANDCELL_IDLE_TIMEOUT_MS: '20 min' })).toThrow(
      /SANDCELL_IDLE_TIMEOUT_MS takes milliseconds.*old name of SANDCELL_IDLE_TIMEOUT/,
    );
    expect(() => resolveServerOptions({}, { SANDCELL_MAX_UPLOAD_BYTES: '64 megs' })).toThrow(
      'SANDCELL_MAX_UPLOAD_BYTES takes a size such as 64M or 2G (a bare number is bytes); got "64 megs".',
    );
  });

  it('refuses an allowed host with a port, a path or a scheme', () => {
    for (const name of ['proxy.example:8080', 'http://proxy.example', 'proxy.example/x', 'a b']) {
      expect(() => resolveServerOptions({ allowedHosts: [name] }, {}), name).toThrow(/--allowed-host/);
    }
    expect(() => resolveServerOptions({ limits: { maxMcpSessions: 0 } }, {})).toThrow(/maxMcpSessions/);
  });

  it('bounds what conversations keep: defaults, environment, and bounds that must nest', () => {
    const defaults = resolveServerOptions({}, {});
    expect(defaults.conversationOutputBytes).toBe(1024 * 1024);
    expect(defaults.conversationHistoryBytes).toBe(32 * 1024 * 1024);
    expect(defaults.limits.conversationBytes).toBe(256 * 1024 * 1024);
    const fromEnvironment = resolveServerOptions(
      {},
      {
        SANDCELL_CONVERSATION_OUTPUT_BYTES: '65536',
        SANDCELL_CONVERSATION_HISTORY_BYTES: '1048576',
        SANDCELL_CONVERSATION_BYTES_PER_KEY: '2097152',
      },
    );
    expect([
      fromEnvironment.conversationOutputBytes,
      fromEnvironment.conversationHistoryBytes,
      fromEnvironment.limits.conversationBytes,
    ]).toEqual([65536, 1048576, 2097152]);
    expect(() => resolveServerOptions({ conversationHistoryBytes: 128 * 1024 * 1024 }, {})).toThrow(/at most/);
    expect(() => resolveServerOptions({ conversationOutputBytes: 2048, conversationHistoryBytes: 1024 }, {})).toThrow(
      /must nest/,
    );
    expect(() => resolveServerOptions({ limits: { conversationBytes: 1024 * 1024 } }, {})).toThrow(
      /SANDCELL_CONVERSATION_BYTES_PER_KEY/,
    );
  });

  it('takes the data budget from the option, else SANDCELL_DATA_BUDGET_BYTES, else half of the memory', () => {
    expect(resolveServerOptions({ dataBudgetBytes: 64 << 20 }, {}).dataBudgetBytes).toBe(64 << 20);
    expect(resolveServerOptions({}, { SANDCELL_DATA_BUDGET_BYTES: String(32 << 20) }).dataBudgetBytes).toBe(32 << 20);
    const half = resolveServerOptions({}, {}).dataBudgetBytes;
    expect(Math.abs(half - os.totalmem() / 2)).toBeLessThan(4096);
    expect(() => resolveServerOptions({ dataBudgetBytes: 100 }, {})).toThrow(/dataBudgetBytes/);
  });

  it('refuses to listen beyond loopback without keys, and says how to fix it', () => {
    expect(() => resolveServerOptions({ host: '0.0.0.0' }, {})).toThrow(InvalidInputError);
    expect(() => resolveServerOptions({ host: '0.0.0.0' }, {})).toThrow(/SANDCELL_API_KEYS/);
    expect(resolveServerOptions({ host: '0.0.0.0', apiKeys: ['long-enough-key'] }, {}).host).toBe('0.0.0.0');
    expect(resolveServerOptions({ host: '::1' }, {}).host).toBe('::1');
    expect(resolveServerOptions({}, { SANDCELL_API_KEYS: 'a:key-one-1234, b:key-two-1234' }).apiKeys).toEqual([
      'a:key-one-1234',
      'b:key-two-1234',
    ]);
    expect(() => resolveServerOptions({ apiKeys: ['short'] }, {})).toThrow(/at least 8/);
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

  it('marks the keys named by --gvisor-key, and refuses a name no key has', () => {
    const keys = new ApiKeys(['team:first-key-123', 'guest:second-key-456'], ['guest']);
    expect(keys.authenticate('Bearer second-key-456')).toMatchObject({ label: 'guest', isolation: 'gvisor' });
    expect(keys.authenticate('Bearer first-key-123').isolation).toBeUndefined();
    expect(() => new ApiKeys(['team:first-key-123'], ['guest'])).toThrow(
      /--gvisor-key .* names "guest", which no API key/,
    );
    expect(resolveServerOptions({ apiKeys: ['g:second-key-456'] }, { SANDCELL_GVISOR_KEYS: 'g' }).gvisorKeys).toEqual([
      'g',
    ]);
  });

  it('refuses two keys with one name', () => {
    expect(() => new ApiKeys(['a:key-one-1234', 'a:key-two-1234'])).toThrow(InvalidInputError);
  });
});

import { describe, expect, it } from 'vitest';
import { mcpCommand } from './mcp-command.js';
import { serverOptionsFrom } from './serve-command.js';

const flags = { apiKey: [], allowedHost: [] };

describe('serve flags take sizes and durations as every command does', () => {
  it('sizes with suffixes or in bytes, durations with units or in seconds', () => {
    const options = serverOptionsFrom({
      ...flags,
      maxUploadBytes: '64M',
      maxRequestBytes: '4096',
      dataBudgetBytes: '2G',
      headersTimeout: '250ms',
      maxExecutionTime: '15m',
      timeout: '90',
      idleTimeout: '1h',
      shutdownGrace: '0',
    });
    expect(options.limits).toMatchObject({
      maxUploadBytes: 64 * 1024 ** 2,
      maxRequestBytes: 4096,
      maxExecutionMs: 15 * 60_000,
    });
    expect(options).toMatchObject({
      dataBudgetBytes: 2 * 1024 ** 3,
      headersTimeoutMs: 250,
      executionTimeoutMs: 90_000,
      idleTimeoutMs: 3_600_000,
      shutdownGraceMs: 0,
    });
  });

  it('refuse what is not one, naming the flag', () => {
    expect(() => serverOptionsFrom({ ...flags, maxUploadBytes: '64 megs' })).toThrow(
      '--max-upload-bytes takes a size such as 512M or 2G; got "64 megs".',
    );
    expect(() => serverOptionsFrom({ ...flags, idleTimeout: '20 minutes' })).toThrow(
      '--idle-timeout takes a duration such as 30s, 5m or 1h (a bare number is seconds); got "20 minutes".',
    );
  });

  it('mcp --idle-timeout takes a duration too', async () => {
    await expect(mcpCommand({ idleTimeout: 'later' })).rejects.toThrow('--idle-timeout takes a duration');
  });
});

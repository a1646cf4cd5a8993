/** `sandcell serve` refuses to listen beyond loopback without API keys. The keys' logic is in src/server/core/per-key.test.ts. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

describe('binding', () => {
  it('`sandcell serve --host 0.0.0.0` without keys exits with a usage error', () => {
    const bin = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');
    const result = spawnSync(process.execPath, [bin, 'serve', '--host', '0.0.0.0', '--port', '0'], {
      encoding: 'utf8',
      env: { ...process.env, SANDCELL_API_KEYS: '' },
      timeout: 20_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Refusing to listen on 0.0.0.0 without API keys');
  });
});

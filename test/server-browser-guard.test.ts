/**
 * `sandcell serve` adds the names of --allowed-host and SANDCELL_ALLOWED_HOSTS to the loopback
 * ones its Host check answers, and refuses a malformed name. What the guard refuses is tested on
 * the server's own logic in src/server/browser-guard-server.test.ts.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { rawRequest } from './support/raw-http.js';

describe('sandcell serve', () => {
  const bin = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');

  /** Starts the built CLI; resolves with its port once it listens, or with its exit code and output. */
  function serve(args: string[], environment: Record<string, string> = {}) {
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--pool-size', '0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SANDCELL_API_KEYS: '', ...environment },
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const started = new Promise<{ port: number } | { code: number | null; stderr: string }>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        const url = (JSON.parse(line) as { url?: string }).url;
        if (url) resolve({ port: Number(new URL(url).port) });
      });
      void exited.then((code) => resolve({ code, stderr }));
    });
    const stop = async () => {
      child.kill('SIGTERM');
      await exited;
    };
    return { started, stop };
  }

  it('--allowed-host and SANDCELL_ALLOWED_HOSTS add names to loopback ones; a malformed name stops the start', async () => {
    const server = serve(['--allowed-host', 'one.proxy.example', '--allowed-host', 'two.proxy.example'], {
      SANDCELL_ALLOWED_HOSTS: 'ignored.proxy.example',
    });
    try {
      const started = await server.started;
      if (!('port' in started)) throw new Error(`serve did not start: ${started.stderr}`);
      const status = async (host: string) => (await rawRequest(started.port, '/healthz', { headers: { host } })).status;
      expect(await status('one.proxy.example')).toBe(200);
      expect(await status('two.proxy.example:443')).toBe(200);
      expect(await status(`localhost:${started.port}`)).toBe(200);
      // Flags win over the environment, as for every option.
      expect(await status('ignored.proxy.example')).toBe(421);
      expect(await status('rebind.attacker.example')).toBe(421);
    } finally {
      await server.stop();
    }

    const fromEnvironment = serve([], { SANDCELL_ALLOWED_HOSTS: 'env.proxy.example, other.proxy.example' });
    try {
      const started = await fromEnvironment.started;
      if (!('port' in started)) throw new Error(`serve did not start: ${started.stderr}`);
      const health = await rawRequest(started.port, '/healthz', { headers: { host: 'other.proxy.example' } });
      expect(health.status).toBe(200);
    } finally {
      await fromEnvironment.stop();
    }

    const malformed = serve(['--allowed-host', 'proxy.example:8080']);
    const refused = await malformed.started;
    expect(refused).toMatchObject({ code: 2 });
    expect((refused as { stderr: string }).stderr).toContain('--allowed-host');
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CliExit } from './exit-codes.js';
import { networkSessionOptions, serveNetworkOptions } from './network-options.js';
import { readSecretHeaders } from './secret-header.js';

const VALUE = 'Bearer sk-from-the-environment';
const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function usageMessage(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(CliExit);
    return (error as Error).message;
  }
  throw new Error('no usage error');
}

describe('--secret-header', () => {
  it('reads the value from the environment or a file, never from the flag', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'sandcell-secret-'));
    directories.push(directory);
    const file = path.join(directory, 'key');
    writeFileSync(file, 'file-key\n');
    expect(
      readSecretHeaders(
        '--secret-header',
        ['api.example.com:Authorization=env:API_AUTHORIZATION', `files.example.com:X-Key=file:${file}`],
        { API_AUTHORIZATION: VALUE },
      ),
    ).toEqual([
      { host: 'api.example.com', header: 'Authorization', value: VALUE },
      { host: 'files.example.com', header: 'X-Key', value: 'file-key' },
    ]);
  });

  it('makes the network option with --allow-host, and is a usage error without a source, a host or a set variable', () => {
    process.env.SANDCELL_TEST_SECRET = VALUE;
    try {
      expect(
        networkSessionOptions({
          allowHost: ['api.example.com'],
          secretHeader: ['api.example.com:Authorization=env:SANDCELL_TEST_SECRET'],
        }),
      ).toEqual({
        network: {
          allow: ['api.example.com'],
          secrets: [{ host: 'api.example.com', header: 'Authorization', value: VALUE }],
        },
      });
      const messages = [
        usageMessage(() =>
          networkSessionOptions({
            allowHost: ['api.example.com'],
            secretHeader: [`api.example.com:Authorization=${VALUE}`],
          }),
        ),
        usageMessage(() =>
          networkSessionOptions({ secretHeader: ['api.example.com:Authorization=env:SANDCELL_TEST_SECRET'] }),
        ),
        usageMessage(() =>
          networkSessionOptions({
            allowHost: ['pypi.org'],
            secretHeader: ['api.example.com:Authorization=env:SANDCELL_TEST_SECRET'],
          }),
        ),
        usageMessage(() =>
          networkSessionOptions({
            allowHost: ['api.example.com'],
            secretHeader: ['api.example.com:Authorization=env:SANDCELL_UNSET_VARIABLE'],
          }),
        ),
        usageMessage(() => serveNetworkOptions({ secretHeader: ['api.example.com:Host=env:SANDCELL_TEST_SECRET'] })),
      ];
      for (const message of messages) expect(message).not.toContain('sk-from-the-environment');
    } finally {
      delete process.env.SANDCELL_TEST_SECRET;
    }
  });

  it("on serve: the operator's secrets, for whichever sessions may reach their host", () => {
    process.env.SANDCELL_TEST_SECRET = VALUE;
    try {
      expect(serveNetworkOptions({ secretHeader: ['api.example.com:Authorization=env:SANDCELL_TEST_SECRET'] })).toEqual(
        {
          networkSecrets: [{ host: 'api.example.com', header: 'Authorization', value: VALUE }],
        },
      );
    } finally {
      delete process.env.SANDCELL_TEST_SECRET;
    }
  });
});

import { lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeCertificateBundle } from './certificate-bundle.js';

const TRUSTED = '-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----';
const made: string[] = [];

function scratch(): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bundle-test-'));
  made.push(directory);
  return directory;
}

afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('writeCertificateBundle', () => {
  it("writes the system's CAs and the trusted ones to a file named by its content, and reuses it", async () => {
    const directory = path.join(scratch(), 'bundles');
    const file = await writeCertificateBundle(TRUSTED, directory);
    expect(path.dirname(file)).toBe(directory);
    expect(path.basename(file)).toMatch(/^[0-9a-f]{64}\.pem$/);
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith(`${TRUSTED}\n`)).toBe(true);
    expect(text.length).toBeGreaterThan(TRUSTED.length + 1); // the system's bundle comes first
    expect(lstatSync(file).mode & 0o777).toBe(0o644);
    expect(await writeCertificateBundle(TRUSTED, directory)).toBe(file);
    expect(await writeCertificateBundle(undefined, directory)).not.toBe(file);
  });

  it('replaces a link found under its name instead of handing its target to the engine', async () => {
    const directory = scratch();
    const first = await writeCertificateBundle(TRUSTED, directory);
    rmSync(first);
    const secret = path.join(scratch(), 'host-secret');
    writeFileSync(secret, 'not a certificate\n');
    symlinkSync(secret, first);
    const file = await writeCertificateBundle(TRUSTED, directory);
    expect(file).toBe(first);
    expect(lstatSync(file).isFile()).toBe(true);
    expect(readFileSync(file, 'utf8')).toContain(TRUSTED);
    expect(readFileSync(secret, 'utf8')).toBe('not a certificate\n');
  });
});

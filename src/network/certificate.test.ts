import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueServerCertificate } from './certificate.js';

const directory = mkdtempSync(path.join(tmpdir(), 'sandcell-certificate-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** openssl's strict verification (RFC 5280 checks, name constraints): its output, or its error. */
function verify(authority: string, leaf: string): string {
  const authorityFile = path.join(directory, 'authority.pem');
  const leafFile = path.join(directory, 'leaf.pem');
  writeFileSync(authorityFile, authority);
  writeFileSync(leafFile, leaf);
  try {
    return execFileSync('openssl', ['verify', '-x509_strict', '-CAfile', authorityFile, leafFile], {
      encoding: 'utf8',
      stdio: 'pipe',
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    return `${stdout}${stderr}`;
  }
}

describe('certificates written with node:crypto', () => {
  const authority = createCertificateAuthority('sandcell test authority', ['api.example.com'], 1);

  it('issues a server certificate that strict verifiers accept for its host', () => {
    const leaf = issueServerCertificate(authority, 'sandcell test authority', 'api.example.com', 1);
    expect(verify(authority.certificate, leaf.certificate)).toContain(': OK');
    const parsed = new X509Certificate(leaf.certificate);
    expect(parsed.subjectAltName).toBe('DNS:api.example.com');
    expect(parsed.checkHost('api.example.com')).toBe('api.example.com');
    expect(parsed.ca).toBe(false);
    expect(new X509Certificate(authority.certificate).ca).toBe(true);
  });

  it('makes an authority that cannot vouch for any other host', () => {
    const other = issueServerCertificate(authority, 'sandcell test authority', 'bank.example.org', 1);
    expect(verify(authority.certificate, other.certificate)).toMatch(/permitted subtree violation/);
  });
});

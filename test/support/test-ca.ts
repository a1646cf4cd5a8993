/**
 * A certificate authority made for one test run with openssl, and a server certificate it signs
 * for the names a test uses, so an HTTPS server on 127.0.0.1 can stand in for a host on the
 * internet. The caller removes `directory` when done.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface TestCertificates {
  directory: string;
  /** PEM of the CA: what a client is told to trust. */
  caCertificate: string;
  caCertificatePath: string;
  /** PEM key and certificate for the server, valid for every name asked for. */
  serverKey: string;
  serverCertificate: string;
}

export function createTestCertificates(names: readonly string[]): TestCertificates {
  const directory = mkdtempSync(path.join(tmpdir(), 'sandcell-test-ca-'));
  const file = (name: string) => path.join(directory, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: directory, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=sandcell test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    `/CN=${names[0] ?? 'localhost'}`,
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
  );
  const alternativeNames = names.map((name) => (/^[0-9.]+$/.test(name) ? `IP:${name}` : `DNS:${name}`)).join(',');
  writeFileSync(file('server.ext'), `subjectAltName=${alternativeNames}\nextendedKeyUsage=serverAuth\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'server.ext',
    '-out',
    'server.pem',
  );
  return {
    directory,
    caCertificate: readFileSync(file('ca.pem'), 'utf8'),
    caCertificatePath: file('ca.pem'),
    serverKey: readFileSync(file('server.key'), 'utf8'),
    serverCertificate: readFileSync(file('server.pem'), 'utf8'),
  };
}

/**
 * X.509 v3 certificates written with node:crypto: a session's own certificate authority, and the
 * certificates it signs for the hosts whose requests the gate adds a secret to. Keys are P-256,
 * signatures ECDSA with SHA-256. Extensions are those strict verifiers (OpenSSL 3, Python's
 * VERIFY_X509_STRICT) ask for: critical basic constraints, key usage, subject and authority key
 * identifiers, and the host as a DNS subject alternative name.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import {
  derBitString,
  derBoolean,
  derExplicit,
  derImplicit,
  derObjectIdentifier,
  derOctetString,
  derSequence,
  derSet,
  derSmallInteger,
  derTime,
  derUnsignedInteger,
  derUtf8String,
  derValue,
} from './der.js';

export interface IssuedCertificate {
  /** PEM of the certificate. */
  certificate: string;
  /** The private key, which never leaves the gate's process. */
  privateKey: KeyObject;
  /** PEM of the private key, as `tls.createSecureContext` takes it. */
  privateKeyPem: string;
  subjectKeyIdentifier: Buffer;
}

const ECDSA_WITH_SHA256 = derSequence(derObjectIdentifier('1.2.840.10045.4.3.2'));
const KEY_USAGE_DIGITAL_SIGNATURE = 0x80;
const KEY_USAGE_CERTIFICATE_SIGN = 0x04;
const KEY_USAGE_CRL_SIGN = 0x02;

/**
 * A new authority valid from an hour ago (clocks differ a little) for `validDays`, allowed to vouch
 * for `permittedHosts` alone (a critical name constraint), so trusting it trusts nothing else.
 */
export function createCertificateAuthority(
  commonName: string,
  permittedHosts: readonly string[],
  validDays: number,
): IssuedCertificate {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keyIdentifier = keyIdentifierOf(publicKey);
  const name = distinguishedName(commonName);
  const certificate = signCertificate({
    issuer: name,
    subject: name,
    publicKey,
    signingKey: privateKey,
    validDays,
    extensions: [
      extension('2.5.29.19', true, derSequence(derBoolean(true), derSmallInteger(0))),
      extension('2.5.29.15', true, keyUsage(KEY_USAGE_CERTIFICATE_SIGN | KEY_USAGE_CRL_SIGN)),
      extension('2.5.29.14', false, derOctetString(keyIdentifier)),
      extension(
        '2.5.29.30',
        true,
        derSequence(
          derValue(
            0xa0,
            Buffer.concat(permittedHosts.map((host) => derSequence(derImplicit(2, Buffer.from(host, 'ascii'))))),
          ),
        ),
      ),
    ],
  });
  return { certificate, privateKey, privateKeyPem: pemOfKey(privateKey), subjectKeyIdentifier: keyIdentifier };
}

/** A server certificate for `host`, signed by `authority`. */
export function issueServerCertificate(
  authority: IssuedCertificate,
  authorityName: string,
  host: string,
  validDays: number,
): IssuedCertificate {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keyIdentifier = keyIdentifierOf(publicKey);
  const certificate = signCertificate({
    issuer: distinguishedName(authorityName),
    subject: distinguishedName(host),
    publicKey,
    signingKey: authority.privateKey,
    validDays,
    extensions: [
      extension('2.5.29.19', true, derSequence()),
      extension('2.5.29.15', true, keyUsage(KEY_USAGE_DIGITAL_SIGNATURE)),
      extension('2.5.29.37', false, derSequence(derObjectIdentifier('1.3.6.1.5.5.7.3.1'))),
      extension('2.5.29.17', false, derSequence(derImplicit(2, Buffer.from(host, 'ascii')))),
      extension('2.5.29.14', false, derOctetString(keyIdentifier)),
      extension('2.5.29.35', false, derSequence(derImplicit(0, authority.subjectKeyIdentifier))),
    ],
  });
  return { certificate, privateKey, privateKeyPem: pemOfKey(privateKey), subjectKeyIdentifier: keyIdentifier };
}

function signCertificate(input: {
  issuer: Buffer;
  subject: Buffer;
  publicKey: KeyObject;
  signingKey: KeyObject;
  validDays: number;
  extensions: Buffer[];
}): string {
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const toBeSigned = derSequence(
    derExplicit(0, derSmallInteger(2)),
    derUnsignedInteger(serial),
    ECDSA_WITH_SHA256,
    input.issuer,
    derSequence(derTime(new Date(now - 3_600_000)), derTime(new Date(now + input.validDays * 86_400_000))),
    input.subject,
    input.publicKey.export({ type: 'spki', format: 'der' }),
    derExplicit(3, derSequence(...input.extensions)),
  );
  const signature = sign('sha256', toBeSigned, input.signingKey);
  const der = derSequence(toBeSigned, ECDSA_WITH_SHA256, derBitString(signature));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function distinguishedName(commonName: string): Buffer {
  return derSequence(derSet(derSequence(derObjectIdentifier('2.5.4.3'), derUtf8String(commonName))));
}

function extension(identifier: string, critical: boolean, value: Buffer): Buffer {
  return derSequence(derObjectIdentifier(identifier), ...(critical ? [derBoolean(true)] : []), derOctetString(value));
}

/** KeyUsage as a BIT STRING of one byte; trailing zero bits are counted as unused, as DER wants. */
function keyUsage(bits: number): Buffer {
  let unused = 0;
  while (unused < 7 && ((bits >> unused) & 1) === 0) unused++;
  return derBitString(Buffer.from([bits]), unused);
}

/** RFC 5280's method 1: the SHA-1 of the public key's bits (an identifier, not a security measure). */
function keyIdentifierOf(publicKey: KeyObject): Buffer {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  // For P-256 the key's BIT STRING is the last 66 bytes: 0x00 unused bits, then the 65-byte point.
  return createHash('sha1')
    .update(spki.subarray(spki.length - 65))
    .digest();
}

function pemOfKey(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

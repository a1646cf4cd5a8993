/**
 * A session's own certificate authority, made in memory when its gate starts and gone when the
 * gate closes. It vouches only for the hosts the session has secrets for (a name constraint), its
 * key never leaves the gate's process, and its certificate is what the sandbox is told to trust
 * beside the system's, so the gate can end TLS for those hosts and add the secret to each request.
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import { createCertificateAuthority, type IssuedCertificate, issueServerCertificate } from './certificate.js';

/** Long enough for any session; the authority dies with the gate anyway. */
const VALID_DAYS = 30;

export interface SessionAuthority {
  /** PEM of the authority's certificate: public, added to the sandbox's bundle. */
  readonly certificate: string;
  /** The TLS server context for `host` (one of the hosts it was made for), made on first use. */
  contextFor(host: string): SecureContext;
}

export function createSessionAuthority(sessionId: string, hosts: readonly string[]): SessionAuthority {
  const name = `sandcell gate for session ${sessionId}`;
  const authority: IssuedCertificate = createCertificateAuthority(name, hosts, VALID_DAYS);
  const contexts = new Map<string, SecureContext>();
  return {
    certificate: authority.certificate,
    contextFor(host) {
      let context = contexts.get(host);
      if (!context) {
        if (!hosts.includes(host)) throw new Error(`the session authority does not vouch for ${host}`);
        const issued = issueServerCertificate(authority, name, host, VALID_DAYS);
        context = createSecureContext({
          key: issued.privateKeyPem,
          cert: issued.certificate + authority.certificate,
          minVersion: 'TLSv1.2',
        });
        contexts.set(host, context);
      }
      return context;
    },
  };
}

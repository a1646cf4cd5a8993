/**
 * The server's own signed links (a published output on a directory store, an upload into a
 * session): `<payload>.<signature>`, both base64url, the payload a small JSON object of claims
 * with `e` its expiry in seconds, the signature an HMAC-SHA256 under a key of the link's kind,
 * derived from the store's secret, so one kind's token is never another's and none is a
 * snapshot's. A token is nothing (undefined) unless it verifies, parses and has not expired.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** A token's payload is small: a key or a session, a path, an expiry. */
const MAX_TOKEN_CHARS = 2048;

export class SignedTokens {
  private key?: Buffer;

  /** `purpose`: the kind of link, which its key is derived for ('sandcell output links'). */
  constructor(private readonly purpose: string) {}

  /** A token for `claims` that works until `expiresAt`, to the second below it: never longer than said. */
  sign(secret: Uint8Array, claims: Record<string, unknown>, expiresAt: Date): string {
    const payload = Buffer.from(JSON.stringify({ ...claims, e: Math.floor(expiresAt.getTime() / 1000) })).toString(
      'base64url',
    );
    return `${payload}.${this.signature(secret, payload).toString('base64url')}`;
  }

  /** The token's claims, if it is one of this kind's, whole and unexpired. */
  verify(secret: Uint8Array, token: string, now = Date.now()): Record<string, unknown> | undefined {
    if (token.length > MAX_TOKEN_CHARS) return undefined;
    const [payload = '', signature = '', ...rest] = token.split('.');
    if (rest.length > 0) return undefined;
    // Compared as text, not decoded: a base64 decoder skips characters outside its alphabet and the
    // bits past a digest's last byte, so many strings would decode to one signature.
    const expected = Buffer.from(this.signature(secret, payload).toString('base64url'));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return undefined;
    const { e: expires } = claims as { e?: unknown };
    if (typeof expires !== 'number' || expires * 1000 < now) return undefined;
    return claims as Record<string, unknown>;
  }

  private signature(secret: Uint8Array, payload: string): Buffer {
    this.key ??= createHmac('sha256', secret).update(this.purpose).digest();
    return createHmac('sha256', this.key).update(payload).digest();
  }
}

/**
 * Jupyter's password login, which Open WebUI offers beside the token: `GET
 * /login` sets an `_xsrf` cookie, `POST /login` (form `_xsrf`, `password`)
 * sets a login cookie, and later requests send the cookie with `X-XSRFToken`.
 * The password is a sandcell API key; a login lasts a day and is kept in
 * memory (bounded: the oldest logins go first).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKeys, Owner } from '../core/auth.js';

export const XSRF_COOKIE = '_xsrf';
export const LOGIN_COOKIE = 'sandcell-jupyter-login';
const LOGIN_LIFETIME_MS = 24 * 60 * 60_000;
const MAX_LOGINS = 10_000;

export const newSecret = (): string => randomBytes(24).toString('hex');

export function sameSecret(left: string | undefined, right: string | undefined): boolean {
  if (!left || !right || left.length !== right.length) return false;
  return timingSafeEqual(Buffer.from(left), Buffer.from(right));
}

export class PasswordLogins {
  private readonly logins = new Map<string, { owner: Owner; expiresAt: number }>();

  constructor(private readonly apiKeys: ApiKeys) {}

  /** A login cookie's value for this password, or undefined when it is not an API key. */
  logIn(password: string): string | undefined {
    let owner: Owner;
    try {
      owner = this.apiKeys.authenticate(`Bearer ${password}`);
    } catch {
      return undefined;
    }
    const token = newSecret();
    this.logins.set(token, { owner, expiresAt: Date.now() + LOGIN_LIFETIME_MS });
    while (this.logins.size > MAX_LOGINS) {
      const oldest = this.logins.keys().next().value;
      if (oldest === undefined) break;
      this.logins.delete(oldest);
    }
    return token;
  }

  owner(token: string | undefined): Owner | undefined {
    if (!token) return undefined;
    const login = this.logins.get(token);
    if (!login) return undefined;
    if (login.expiresAt < Date.now()) {
      this.logins.delete(token);
      return undefined;
    }
    return login.owner;
  }
}

/** The value of one cookie in a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

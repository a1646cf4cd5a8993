/**
 * Who a Jupyter client is. Its token is a sandcell API key, sent as Jupyter
 * clients send tokens: `Authorization: token X` (or `Bearer X`), or `?token=X`
 * (Open WebUI, and every websocket from a browser); or it logged in with the
 * key as password (password-login.ts) and sends the login cookie, with
 * `X-XSRFToken` matching its `_xsrf` cookie on anything but GET. Jupyter
 * answers a missing or wrong token with 403, and so does this. Without keys
 * (loopback only) every client is the local owner.
 */
import type { ApiKeys, Owner } from '../core/auth.js';
import { JupyterHttpError } from './jupyter-errors.js';
import { cookieValue, LOGIN_COOKIE, type PasswordLogins, sameSecret, XSRF_COOKIE } from './password-login.js';

export interface JupyterCredentials {
  method: string;
  authorization?: string;
  queryToken?: string;
  cookie?: string;
  xsrfHeader?: string;
}

export function jupyterToken(authorization: string | undefined, queryToken: string | undefined): string | undefined {
  const fromHeader = /^(?:token|bearer)\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  return fromHeader ?? (queryToken || undefined);
}

export function authenticateJupyter(apiKeys: ApiKeys, logins: PasswordLogins, credentials: JupyterCredentials): Owner {
  if (!apiKeys.enabled) return apiKeys.authenticate(undefined);
  const token = jupyterToken(credentials.authorization, credentials.queryToken);
  if (token !== undefined) {
    try {
      return apiKeys.authenticate(`Bearer ${token}`);
    } catch {
      throw new JupyterHttpError(403, 'Forbidden: the token is not an API key of this server.');
    }
  }
  const loggedIn = logins.owner(cookieValue(credentials.cookie, LOGIN_COOKIE));
  if (!loggedIn) throw new JupyterHttpError(403, 'Forbidden: send the API key as a token, or log in with it.');
  // A cookie travels with any request the browser makes: a change also needs the XSRF token only pages here can read.
  const safe = credentials.method === 'GET' || credentials.method === 'HEAD';
  if (!safe && !sameSecret(credentials.xsrfHeader, cookieValue(credentials.cookie, XSRF_COOKIE))) {
    throw new JupyterHttpError(403, "Forbidden: '_xsrf' argument missing or not matching its cookie.");
  }
  return loggedIn;
}

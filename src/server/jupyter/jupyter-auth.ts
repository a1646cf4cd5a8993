/**
 * Who a Jupyter client is. Its token is a sandcell API key, sent as Jupyter
 * clients send tokens: `Authorization: token X` (or `Bearer X`), or `?token=X`
 * (Open WebUI, and every websocket from a browser). Jupyter answers a missing
 * or wrong token with 403, and so does this. Without keys (loopback only) every
 * client is the local owner.
 */
import type { ApiKeys, Owner } from '../auth.js';
import { JupyterHttpError } from './jupyter-errors.js';

export function jupyterToken(authorization: string | undefined, queryToken: string | undefined): string | undefined {
  const fromHeader = /^(?:token|bearer)\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  return fromHeader ?? (queryToken || undefined);
}

export function authenticateJupyter(
  apiKeys: ApiKeys,
  authorization: string | undefined,
  queryToken: string | undefined,
): Owner {
  const token = jupyterToken(authorization, queryToken);
  if (!apiKeys.enabled) return apiKeys.authenticate(undefined);
  if (token === undefined) throw new JupyterHttpError(403, 'Forbidden: send the API key as a token.');
  try {
    return apiKeys.authenticate(`Bearer ${token}`);
  } catch {
    throw new JupyterHttpError(403, 'Forbidden: the token is not an API key of this server.');
  }
}

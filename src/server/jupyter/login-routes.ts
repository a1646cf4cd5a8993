/**
 * `/jupyter/login`, as Jupyter Server answers a password client: GET sets the
 * `_xsrf` cookie; POST checks the form's `_xsrf` against it and the password
 * (an API key), sets the login cookie and redirects to `next` (only a path
 * under /jupyter). Cookies are HttpOnly (but `_xsrf`, which clients read) and
 * SameSite=Lax, scoped to /jupyter.
 */
import type { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { JupyterHttpError } from './jupyter-errors.js';
import { LOGIN_COOKIE, newSecret, type PasswordLogins, sameSecret, XSRF_COOKIE } from './password-login.js';

const COOKIE_PATH = '/jupyter';

export function passwordLoginRoutes(app: Hono, logins: PasswordLogins): void {
  app.get('/login', (context) => {
    const xsrf = getCookie(context, XSRF_COOKIE) ?? newSecret();
    setCookie(context, XSRF_COOKIE, xsrf, { path: COOKIE_PATH, sameSite: 'Lax' });
    return context.json({ message: 'POST the form fields _xsrf and password (an API key of this server) here.' });
  });
  app.post('/login', async (context) => {
    const form = await context.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const xsrf = typeof form._xsrf === 'string' ? form._xsrf : context.req.header('x-xsrftoken');
    if (!sameSecret(xsrf, getCookie(context, XSRF_COOKIE))) {
      throw new JupyterHttpError(
        403,
        "Forbidden: '_xsrf' argument missing or not matching its cookie; GET /login first.",
      );
    }
    const login = typeof form.password === 'string' ? logins.logIn(form.password) : undefined;
    if (!login) throw new JupyterHttpError(403, 'Forbidden: the password is not an API key of this server.');
    setCookie(context, LOGIN_COOKIE, login, { path: COOKIE_PATH, httpOnly: true, sameSite: 'Lax' });
    const next = context.req.query('next');
    return context.redirect(
      next?.startsWith(`${COOKIE_PATH}/`) && !next.startsWith('//') ? next : `${COOKIE_PATH}/api`,
      302,
    );
  });
}

/**
 * The web UI: the built app (dist/web) served at `/`, under a strict
 * Content-Security-Policy. Scripts and styles come only from this origin,
 * nothing inline runs, the page frames only the apps sessions serve (their
 * own origins), and it cannot be framed. Paths the API owns are
 * never answered with the app, nor are requests that do not ask for HTML.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Context, Hono } from 'hono';

/**
 * The page's policy. `frames`: where the apps the sessions serve are (`http://*.localhost:8080`,
 * ports/), the one thing it frames: another origin than the page's, so nothing there reaches it.
 */
export const webCsp = (frames?: string) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' blob: data:",
    "connect-src 'self'",
    "font-src 'self'",
    ...(frames ? [`frame-src ${frames}`] : []),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');

export const WEB_CSP = webCsp();

const SECURITY_HEADERS = {
  'content-security-policy': WEB_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

/** Paths that belong to the APIs: an unknown one there is a JSON 404, not the app. */
const API_PREFIXES = ['/v1/', '/azure/', '/mcp', '/healthz', '/metrics', '/openapi.json'];

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>sandcell</title>
<h1>The sandcell web UI is not built</h1>
<p>Run <code>npm run build</code> (or <code>npm run setup</code>) in the sandcell folder, then reload. The API works without it: see <a href="/openapi.json">/openapi.json</a>.</p>`;

async function readIfFile(file: string): Promise<Buffer | undefined> {
  try {
    if (!(await stat(file)).isFile()) return undefined;
    return await readFile(file);
  } catch {
    return undefined;
  }
}

const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

export function serveWebUi(app: Hono, root: string, frames?: (c: Context) => string): void {
  const base = path.resolve(root);
  // Compressed once per file content (the build's files do not change while serving).
  const compressed = new Map<string, { source: Buffer; gzip: Buffer }>();
  const send = (c: Context, file: string, body: Buffer, status: 200 | 503, headers: Record<string, string>) => {
    const extension = path.extname(file).toLowerCase();
    if (COMPRESSIBLE.has(extension) && /\bgzip\b/i.test(c.req.header('accept-encoding') ?? '')) {
      let entry = compressed.get(file);
      if (!entry?.source.equals(body)) {
        entry = { source: body, gzip: gzipSync(body) };
        compressed.set(file, entry);
      }
      return c.body(new Uint8Array(entry.gzip), status, {
        ...headers,
        'content-encoding': 'gzip',
        vary: 'accept-encoding',
      });
    }
    return c.body(new Uint8Array(body), status, { ...headers, vary: 'accept-encoding' });
  };
  app.get('*', async (c, next) => {
    const requested = c.req.path;
    if (API_PREFIXES.some((prefix) => requested === prefix.replace(/\/$/, '') || requested.startsWith(prefix))) {
      return next();
    }
    let relative: string;
    try {
      relative = decodeURIComponent(requested).replace(/^\/+/, '');
    } catch {
      return next();
    }
    const file = path.resolve(base, relative);
    const inside = file === base || file.startsWith(`${base}${path.sep}`);
    const asset = inside && relative !== '' ? await readIfFile(file) : undefined;
    if (asset) {
      const immutable = relative.startsWith('assets/');
      return send(c, file, asset, 200, {
        ...SECURITY_HEADERS,
        'content-type': TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
        'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      });
    }
    // A page of the app is `/`, or any path without an extension that a browser navigates to;
    // other clients get the API's JSON 404.
    const navigation = /\btext\/html\b/i.test(c.req.header('accept') ?? '');
    if (relative !== '' && (path.extname(relative) !== '' || !navigation)) return next();
    const indexFile = path.join(base, 'index.html');
    const index = await readIfFile(indexFile);
    return send(c, indexFile, index ?? Buffer.from(NOT_BUILT), index ? 200 : 503, {
      ...SECURITY_HEADERS,
      ...(frames ? { 'content-security-policy': webCsp(frames(c)) } : {}),
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-cache',
    });
  });
}

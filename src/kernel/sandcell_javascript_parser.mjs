// Finds acorn, the JavaScript parser the kernel reads cells with: Debian's node-acorn (which
// Debian's own Node.js depends on), else one Node can resolve from here (a development checkout).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const CANDIDATES = ['/usr/share/nodejs/acorn/dist/acorn.mjs', '/usr/lib/node_modules/acorn/dist/acorn.mjs'];

/** Resolves to acorn's module; rejects with a message naming the package to install. */
export async function loadParser() {
  const found = CANDIDATES.find((candidate) => existsSync(candidate));
  if (found) return import(pathToFileURL(found).href);
  try {
    return await import(pathToFileURL(createRequire(import.meta.url).resolve('acorn')).href);
  } catch {
    throw new Error(
      'The JavaScript kernel needs acorn, which is not installed in this sandbox (Debian package `node-acorn`; `npm run setup` installs it on the host).',
    );
  }
}

#!/usr/bin/env node
// Part of `npm run lint`: a source file that grows past MAX_LINES is holding two jobs, and is cut
// at the seam, unless its first lines say why it stays long (a line with "Long because"). Lists
// each one that does neither and exits non-zero, the way `npm run cycles` keeps imports acyclic.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './setup-common.mjs';

const MAX_LINES = 600;
/** Where the reason must be: within the file's header. */
const HEADER_LINES = 25;
const ROOTS = ['src', 'web/src', 'scripts', 'bench'];
const EXTENSIONS = new Set(['.ts', '.tsx', '.mjs', '.js', '.py', '.R']);

function* files(directory) {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'results') yield* files(full);
    } else if (EXTENSIONS.has(path.extname(entry.name))) yield full;
  }
}

const long = [];
for (const base of ROOTS) {
  for (const file of files(path.join(root, base))) {
    const lines = readFileSync(file, 'utf8').split('\n');
    const count = lines.at(-1) === '' ? lines.length - 1 : lines.length;
    const name = path.relative(root, file);
    if (count <= MAX_LINES) continue;
    if (lines.slice(0, HEADER_LINES).some((line) => /long because/i.test(line))) continue;
    long.push(`${name}: ${count} lines`);
  }
}
if (long.length > 0) {
  process.stderr.write(
    `Files over ${MAX_LINES} lines that do not say why in their first ${HEADER_LINES} lines ("Long because …"): cut each at its seam, or say why it stays long.\n${long.map((line) => `  ${line}`).join('\n')}\n`,
  );
  process.exit(1);
}
process.stdout.write(`No source file over ${MAX_LINES} lines without a reason.\n`);

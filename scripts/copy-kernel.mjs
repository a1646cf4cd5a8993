// Copies the Python programs that run in the sandbox (and their data files, e.g. the package list) next to the compiled code.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

function copyPython(source, target) {
  for (const entry of readdirSync(source, { withFileTypes: true })) {
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (entry.isDirectory()) copyPython(from, to);
    else if (entry.name.endsWith('.py') || entry.name.endsWith('.json')) {
      mkdirSync(target, { recursive: true });
      copyFileSync(from, to);
    }
  }
}

copyPython('src', 'dist');

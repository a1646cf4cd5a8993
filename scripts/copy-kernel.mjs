// Copies the Python programs that run in the sandbox (or generate its filter) next to the compiled code.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

function copyPython(source, target) {
  for (const entry of readdirSync(source, { withFileTypes: true })) {
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (entry.isDirectory()) copyPython(from, to);
    else if (entry.name.endsWith('.py')) {
      mkdirSync(target, { recursive: true });
      copyFileSync(from, to);
    }
  }
}

copyPython('src', 'dist');

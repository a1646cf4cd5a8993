// Copies what runs in the sandbox next to the compiled code: the Python programs and their data files (e.g. the
// package list) anywhere under src/, and every kernel file of src/kernel (the kernels of other languages too).
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

function copyPython(source, target) {
  for (const entry of readdirSync(source, { withFileTypes: true })) {
    const from = path.join(source, entry.name);
    const to = path.join(target, entry.name);
    if (entry.isDirectory()) copyPython(from, to);
    else if (entry.name.endsWith('.py') || entry.name.endsWith('.json') || isKernelFile(source, entry.name)) {
      mkdirSync(target, { recursive: true });
      copyFileSync(from, to);
    }
  }
}

/** The same pattern as kernelFiles() in src/kernel/index.ts. */
function isKernelFile(directory, name) {
  return path.normalize(directory) === path.normalize('src/kernel') && /^sandcell_[a-z0-9_]+\.(py|mjs|R)$/.test(name);
}

copyPython('src', 'dist');

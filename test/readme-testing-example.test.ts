/**
 * The README's `sandcell/testing` example, run as written: its fenced block is
 * taken from README.md and run by Node against the built package (a package
 * may import itself by name), so a README that drifts from the code fails here.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { runProcess } from './support/process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function readmeBlockImporting(specifier: string): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  const block = blocks.find((code) => code.includes(`from '${specifier}'`));
  if (!block) throw new Error(`README.md has no ts block importing ${specifier}`);
  return block;
}

it("runs the README's scripted-backend example as written and prints what its comments say", async () => {
  const code = readmeBlockImporting('sandcell/testing');
  // Inside the package's own folder, so that `import … from 'sandcell'` resolves to this package.
  const directory = mkdtempSync(path.join(root, '.readme-example-'));
  try {
    const file = path.join(directory, 'example.mjs');
    writeFileSync(file, code);
    const result = await runProcess(process.execPath, [file], { cwd: directory });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n').filter(Boolean)).toEqual(['ran 1 + 1', 'KernelDied']);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

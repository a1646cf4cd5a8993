/**
 * The README's languages block, run as written: each `npx sandcell …` line is
 * run with the built CLI on a real sandbox from the repository's root (as a
 * reader would), and what its comment says is checked, so a README that drifts
 * from the code fails here.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { runProcess } from './support/process.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const outputDir = mkdtempSync(path.join(root, '.readme-example-'));
afterAll(() => rmSync(outputDir, { recursive: true, force: true }));

/** The lines of the sh block after the README's `readme-languages` marker, comments cut. */
function readmeLines(): { args: string[]; input?: string }[] {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const block = readme.split('<!-- readme-languages')[1]?.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error('README.md has no sh block after its readme-languages marker');
  return block
    .split('\n')
    .filter((line) => line.includes('npx sandcell'))
    .map((line) => {
      const [piped, command] = line.includes('| npx') ? line.split(/\s*\|\s*(?=npx)/) : [undefined, line];
      const words = (command ?? '').replace(/\s+#.*$/, '').trim();
      // The shell would unquote 'exit 3': the README's only quoted argument.
      const args = [...words.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? '').slice(2);
      const input = piped?.match(/^echo '([^']*)'$/)?.[1];
      return input === undefined ? { args } : { args, input: `${input}\n` };
    });
}

it("runs the README's language and exec lines as written and they print what their comments say", async () => {
  const lines = readmeLines();
  expect(lines.map((line) => line.args.slice(0, 2).join(' '))).toEqual([
    'run examples/hello.js',
    'run examples/chart.R',
    'exec --upload',
    'exec --',
    'repl --language',
  ]);
  const results = [];
  for (const line of lines) {
    // Each saves into a scratch directory, so the checkout stays clean.
    const args =
      line.args[0] === 'repl'
        ? line.args
        : [...line.args.slice(0, 1), '--output-dir', outputDir, ...line.args.slice(1)];
    results.push(await runProcess(process.execPath, [bin, ...args], { cwd: root, input: line.input }));
  }
  const [js, r, wc, exit, repl] = results;
  expect(js!.code).toBe(0);
  expect(js!.stdout).toContain('busiest day: Tue (340 visitors)\n555\n');
  expect(r!.code).toBe(0);
  expect(r!.stdout).toContain('best month: May');
  expect(existsSync(path.join(outputDir, 'figure-1.png'))).toBe(true);
  expect(readFileSync(path.join(outputDir, 'figure-1.png')).subarray(1, 4).toString()).toBe('PNG');
  expect(existsSync(path.join(outputDir, 'units.png'))).toBe(true);
  expect(wc!.code).toBe(0);
  expect(wc!.stdout).toBe('8756 traffic_accidents.csv\n');
  expect(exit!.code).toBe(3);
  expect(repl!.code).toBe(0);
  expect(repl!.stdout).toContain('bash> ');
  expect(repl!.stdout).toContain('/tmp\n');
});

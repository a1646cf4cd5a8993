#!/usr/bin/env node
// `npm run python-lock`: compiles each test/python/requirements/*.in into its .txt, every package
// pinned with the hashes of its files, with pip-tools in a throwaway virtual environment, from the
// package index pip is configured for (the index is never written into the .txt). Run it after
// changing a .in; `npm run setup` installs what the .txt files say.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setupSteps } from './setup-common.mjs';
import { hostPython, REQUIREMENTS_DIR } from './setup-python.mjs';

const PIP_TOOLS = 'pip-tools==7.6.2';
const { run } = setupSteps('python-lock');
const scratch = mkdtempSync(path.join(tmpdir(), 'sandcell-python-lock-'));
try {
  run(hostPython(), ['-m', 'venv', scratch]);
  run(path.join(scratch, 'bin', 'pip'), ['install', '--quiet', PIP_TOOLS]);
  for (const input of readdirSync(REQUIREMENTS_DIR).filter((name) => name.endsWith('.in'))) {
    run(
      path.join(scratch, 'bin', 'pip-compile'),
      [
        '--quiet',
        '--generate-hashes',
        '--allow-unsafe',
        '--strip-extras',
        '--no-emit-index-url',
        '--no-emit-find-links',
        '--output-file',
        input.replace(/\.in$/, '.txt'),
        input,
      ],
      { cwd: REQUIREMENTS_DIR },
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

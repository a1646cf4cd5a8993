// The Python clients' test environments (test/python/): one virtual environment per
// test/python/requirements/*.txt, under test/python/venvs/ (ignored), installed with
// `pip install --require-hashes` from the package index pip is configured for. An environment
// whose requirements file and Python are unchanged since it was installed is reused as it is.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './setup-common.mjs';

export const REQUIREMENTS_DIR = path.join(root, 'test', 'python', 'requirements');
export const VENVS_DIR = path.join(root, 'test', 'python', 'venvs');
const STAMP = '.sandcell-installed';

/** Debian's Python where there is one (what a fresh Debian machine has), else the first on PATH. */
export function hostPython() {
  return existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
}

/** Installs every test environment that is missing or out of date; `run` and `say` are setupSteps'. */
export function installPythonClients({ run, say }) {
  const python = hostPython();
  const version = execFileSync(python, ['--version'], { encoding: 'utf8' }).trim();
  for (const file of readdirSync(REQUIREMENTS_DIR).filter((name) => name.endsWith('.txt'))) {
    const name = file.replace(/\.txt$/, '');
    const venv = path.join(VENVS_DIR, name);
    const stamp = path.join(venv, STAMP);
    const wanted = createHash('sha256')
      .update(`${python}\n${version}\n`)
      .update(readFileSync(path.join(REQUIREMENTS_DIR, file)))
      .digest('hex');
    if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) {
      say(`Python test clients (${name}): installed, unchanged.`);
      continue;
    }
    rmSync(venv, { recursive: true, force: true });
    run(python, ['-m', 'venv', venv]);
    run(path.join(venv, 'bin', 'pip'), [
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--require-hashes',
      '--requirement',
      path.join(REQUIREMENTS_DIR, file),
    ]);
    writeFileSync(stamp, wanted);
  }
}

#!/usr/bin/env node
// `npm run setup`: installs what sandcell needs on a Debian/Ubuntu machine, then
// the npm dependencies and the build, and finishes with `sandcell doctor`.
// As root it installs Debian packages with apt-get; otherwise it prints the command.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { debianPackageInstalled, isRoot, root, setupSteps } from './setup-common.mjs';

// One list for the host and the runtime image (sandcell image build), so both run the same Python packages.
const PACKAGE_LISTS = JSON.parse(readFileSync(path.join(root, 'src/image/debian-packages.json'), 'utf8'));
// The web UI's end-to-end tests (test/web-ui.test.ts) drive Debian's chromium with playwright-core.
const TEST_PACKAGES = ['chromium'];
const DEBIAN_PACKAGES = [...PACKAGE_LISTS.host, ...PACKAGE_LISTS.sandbox, ...TEST_PACKAGES];

const { say, run, aptInstall } = setupSteps('setup');

const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < 20) {
  process.stderr.write(`setup: sandcell needs Node.js 20 or newer; this is ${process.versions.node}.\n`);
  process.exit(1);
}

let pending = false;
if (!existsSync('/usr/bin/dpkg-query')) {
  say(`not a Debian-based system: install the equivalents of ${DEBIAN_PACKAGES.join(', ')} yourself.`);
} else {
  const missing = DEBIAN_PACKAGES.filter((pkg) => !debianPackageInstalled(pkg));
  if (missing.length === 0) say('Debian packages: all present.');
  else if (isRoot) aptInstall(missing);
  else {
    pending = true;
    say(
      `missing Debian packages. Run this, then \`npm run setup\` again:\n\n    sudo apt-get install -y --no-install-recommends ${missing.join(' ')}\n`,
    );
  }
}

run('npm', ['install', '--no-audit', '--no-fund']);
run('npm', ['run', 'build']);

if (pending) {
  process.stderr.write('setup: install the Debian packages above, then run `npm run setup` again.\n');
  process.exit(1);
}
// Generates the seccomp filter and checks the whole chain in a real sandbox.
run(process.execPath, ['bin/sandcell.js', 'doctor']);
say('done. Try: npx sandcell run examples/hello.py');

#!/usr/bin/env node
// `npm run setup`: installs what sandcell needs on a Debian/Ubuntu machine, then
// the npm dependencies and the build, and finishes with `sandcell doctor`.
// As root it installs Debian packages with apt-get; otherwise it prints the command.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SANDBOX_USER = process.env.SANDCELL_SANDBOX_USER ?? 'sandcell-sandbox';
// One list for the host and the runtime image (sandcell image build), so both run the same Python packages.
const PACKAGE_LISTS = JSON.parse(readFileSync(path.join(root, 'src/image/debian-packages.json'), 'utf8'));
const DEBIAN_PACKAGES = [...PACKAGE_LISTS.host, ...PACKAGE_LISTS.sandbox];

const isRoot = process.getuid?.() === 0;
const say = (text) => process.stdout.write(`\x1b[1msetup:\x1b[0m ${text}\n`);

function run(command, args, options = {}) {
  say(`$ ${[command, ...args].join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: root, ...options });
  if (result.status !== 0) {
    process.stderr.write(`setup: \`${command} ${args.join(' ')}\` failed (exit ${result.status ?? result.signal}).\n`);
    process.exit(1);
  }
}

function installed(pkg) {
  try {
    return execFileSync('dpkg-query', ['-W', `-f=\${Status}`, pkg], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).includes('install ok installed');
  } catch {
    return false;
  }
}

const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < 20) {
  process.stderr.write(`setup: sandcell needs Node.js 20 or newer; this is ${process.versions.node}.\n`);
  process.exit(1);
}

let pending = false;
if (!existsSync('/usr/bin/dpkg-query')) {
  say(`not a Debian-based system: install the equivalents of ${DEBIAN_PACKAGES.join(', ')} yourself.`);
} else {
  const missing = DEBIAN_PACKAGES.filter((pkg) => !installed(pkg));
  if (missing.length === 0) say('Debian packages: all present.');
  else if (isRoot) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    run('apt-get', ['update', '-qq'], { env });
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env });
  } else {
    pending = true;
    say(
      `missing Debian packages. Run this, then \`npm run setup\` again:\n\n    sudo apt-get install -y --no-install-recommends ${missing.join(' ')}\n`,
    );
  }
}

if (isRoot) {
  const passwd = readFileSync('/etc/passwd', 'utf8');
  if (!passwd.split('\n').some((line) => line.startsWith(`${SANDBOX_USER}:`))) {
    // Sandboxes run as this account when sandcell runs as root: it owns nothing on the host.
    run('useradd', [
      '--system',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      SANDBOX_USER,
    ]);
  } else say(`sandbox account ${SANDBOX_USER}: present.`);
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

#!/usr/bin/env node
// `npm run setup`: installs what sandcell needs on a Debian/Ubuntu machine, then
// the npm dependencies and the build, and finishes with `sandcell doctor`.
// As root it installs Debian packages with apt-get; otherwise it prints the command.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { debianFileOwned, debianPackageInstalled, isRoot, root, setupSteps } from './setup-common.mjs';
import { installPythonClients } from './setup-python.mjs';

// One list for the host and the runtime image (sandcell image build), so both run the same Python packages.
const PACKAGE_LISTS = JSON.parse(readFileSync(path.join(root, 'src/image/debian-packages.json'), 'utf8'));
// The web UI's end-to-end tests (test/web-ui.test.ts) drive Debian's chromium with playwright-core; the
// README's tests (test/readme*.test.ts) run its curl, jq and openssl commands as written. The Jupyter
// front door's tests run Jupyter Server with the classic Notebook as a gateway client, a client written
// as Open WebUI's (aiohttp, websockets), and its bench row a raw local ipykernel. The network gate's
// tests send curl, urllib and requests through it (test/network-gate-clients.test.ts).
const TEST_PACKAGES = [
  'chromium',
  'curl',
  'jq',
  'openssl',
  'python3-jupyter-server',
  'python3-nbclassic',
  'python3-aiohttp',
  'python3-websockets',
  'python3-ipykernel',
  'python3-requests',
  // httpx, the transport of the OpenAI and Anthropic Python SDKs, reaches host.sandcell.internal
  // through a gate with a sandbox's proxy variables (test/network-host-loopback.test.ts).
  'python3-httpx',
  // `npm run lint` checks the kernels' Python with pyflakes (Debian's `/usr/bin/python3 -m pyflakes`).
  'python3-pyflakes',
  // The Python clients' tests (test/python/) run each in a virtual environment of Debian's Python.
  'python3-venv',
  // The cluster's test puts HAProxy in front of its nodes, as a Kubernetes Service would be
  // (test/cluster-haproxy.test.ts).
  'haproxy',
];
const { say, run, aptInstall } = setupSteps('setup');

// Debian's nodejs (and node-acorn, which depends on it) would overwrite a /usr/bin/node that no
// package installed; such a node is left alone, and sandboxes on the host's /usr run it. A node
// from Debian or NodeSource (a package named nodejs) satisfies them, and one elsewhere (nvm,
// /usr/local) is untouched: Debian's then serves only the sandboxes, which see /usr alone.
const NODE_PACKAGES = ['nodejs', 'node-acorn'];
const foreignNode =
  existsSync('/usr/bin/dpkg-query') && existsSync('/usr/bin/node') && !debianFileOwned('/usr/bin/node');
if (foreignNode) {
  say(
    `/usr/bin/node belongs to no Debian package: not installing ${NODE_PACKAGES.join(' and ')} over it. JavaScript and TypeScript cells need acorn at /usr/share/nodejs/acorn (Debian's node-acorn).`,
  );
}
const DEBIAN_PACKAGES = [...PACKAGE_LISTS.host, ...PACKAGE_LISTS.sandbox, ...TEST_PACKAGES].filter(
  (name) => !(foreignNode && NODE_PACKAGES.includes(name)),
);

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

// The lock file pins every dependency (and every platform's optional binaries, so npm 10 and 11 both
// take it as it is): `npm ci` installs exactly that and never rewrites a tracked file.
if (existsSync(path.join(root, 'package-lock.json'))) run('npm', ['ci', '--no-audit', '--no-fund']);
else run('npm', ['install', '--no-audit', '--no-fund']);
run('npm', ['run', 'build']);
installPythonClients({ run, say });

if (pending) {
  process.stderr.write('setup: install the Debian packages above, then run `npm run setup` again.\n');
  process.exit(1);
}
// Generates the seccomp filter and checks the whole chain in a real sandbox.
run(process.execPath, ['bin/sandcell.js', 'doctor']);
say('done. Try: npx sandcell run examples/hello.py');

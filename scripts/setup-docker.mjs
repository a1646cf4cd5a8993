#!/usr/bin/env node
// `npm run setup:docker`: everything the Docker backend needs, after `npm run setup`.
// Installs docker.io and debootstrap from Debian when missing (as root), starts the
// engine when it is not running, then builds the runtime image (or finds it built) and
// the same runtime as a root filesystem for `--rootfs runtime`.
import { spawn } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import { debianPackageInstalled, isRoot, setupSteps } from './setup-common.mjs';

const { say, fail, run, aptInstall } = setupSteps('setup:docker');

async function engineAnswers() {
  const { default: Dockerode } = await import('dockerode');
  try {
    await new Dockerode().ping();
    return true;
  } catch {
    return false;
  }
}

const missing = ['docker.io', 'debootstrap'].filter(
  (pkg) => existsSync('/usr/bin/dpkg-query') && !debianPackageInstalled(pkg),
);
if (missing.length > 0) {
  if (!isRoot) fail(`missing Debian packages; run: sudo apt-get install -y ${missing.join(' ')}`);
  aptInstall(missing);
}

if (await engineAnswers()) say('Docker Engine: running.');
else {
  if (!isRoot || process.env.DOCKER_HOST)
    fail('Docker Engine is not reachable; start it (e.g. `sudo service docker start`) or set DOCKER_HOST.');
  // Without systemd (containers, CI), the engine is started directly and left running, as a service would be.
  say('starting Docker Engine (dockerd), log in /var/log/sandcell-dockerd.log');
  const log = openSync('/var/log/sandcell-dockerd.log', 'a');
  const daemon = spawn('dockerd', [], { detached: true, stdio: ['ignore', log, log] });
  daemon.unref();
  const deadline = Date.now() + 60_000;
  while (!(await engineAnswers())) {
    if (Date.now() > deadline) fail('dockerd did not answer within 60 s; see /var/log/sandcell-dockerd.log.');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  say(`Docker Engine: started (pid ${daemon.pid}).`);
}

// The runtime image, and the same runtime as a root filesystem for bubblewrap; each is reused when built.
run(process.execPath, ['bin/sandcell.js', 'image', 'build']);
if (isRoot) run(process.execPath, ['bin/sandcell.js', 'image', 'build', '--backend', 'bubblewrap']);
run(process.execPath, ['bin/sandcell.js', 'doctor', '--backend', 'docker']);
say('done. Try: npx sandcell run --backend docker examples/hello.py');

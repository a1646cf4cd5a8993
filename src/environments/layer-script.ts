/**
 * The layer as one shell script, run as root inside a copy of the runtime
 * root filesystem (with the network, at build time only): Debian packages,
 * then copied files, then Python packages, then the setup commands, then the
 * package caches removed. Inputs are staged beside it under INPUTS_DIRECTORY
 * by their names in the description, which is also the setup commands'
 * working directory. A failing step stops the script with its own message.
 */
import path from 'node:path';
import { ACCOUNT_FILE_LINKS } from '../image/recipe.js';
import { type EnvironmentDescription, installsPythonPackages } from './description.js';

/** Where the build stages the description's files inside the root filesystem; removed after. */
export const STAGING_DIRECTORY = '/var/tmp/sandcell-environment';
export const INPUTS_DIRECTORY = `${STAGING_DIRECTORY}/inputs`;

/** Single-quotes a word for sh. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The accounts apt and package scripts expect; the runtime's /etc/passwd and /etc/group point into /tmp (ACCOUNT_FILE_LINKS). */
const BUILD_ACCOUNTS = [
  'mkdir -p /tmp/.sandcell',
  `printf '%s\\n' 'root:x:0:0:root:/root:/bin/sh' '_apt:x:42:65534::/nonexistent:/usr/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' > /tmp/.sandcell/passwd`,
  `printf '%s\\n' 'root:x:0:' 'nogroup:x:65534:' > /tmp/.sandcell/group`,
];

export function layerScript(description: EnvironmentDescription): string {
  const lines = ['set -eu', 'export DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8', ...BUILD_ACCOUNTS];
  const python = description.python;
  const debianPackages = [...description.debianPackages];
  if (installsPythonPackages(description)) debianPackages.push('python3-pip');
  if (debianPackages.length > 0) {
    const apt = 'apt-get -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 -q';
    lines.push(
      'echo "sandcell-step: installing Debian packages"',
      `${apt} update`,
      `${apt} install -y --no-install-recommends ${debianPackages.map(shellQuote).join(' ')}`,
    );
  }
  for (const file of description.files) {
    const source = `${INPUTS_DIRECTORY}/${path.posix.normalize(file.source)}`;
    lines.push(
      `echo ${shellQuote(`sandcell-step: copying ${file.source} to ${file.target}`)}`,
      `mkdir -p ${shellQuote(path.posix.dirname(file.target))}`,
      // A directory's contents go to the target, as `cp -R source/. target` does; a file becomes the target.
      `if [ -d ${shellQuote(source)} ]; then mkdir -p ${shellQuote(file.target)} && cp -R --no-preserve=ownership ${shellQuote(`${source}/.`)} ${shellQuote(file.target)}; else cp --no-preserve=ownership ${shellQuote(source)} ${shellQuote(file.target)}; fi`,
      `chmod -R a+rX ${shellQuote(file.target)}`,
    );
  }
  if (installsPythonPackages(description)) {
    const pip = [
      // Debian's layout: /usr/lib/python3/dist-packages and /usr/bin (the sandbox hides /usr/local).
      'DEB_PYTHON_INSTALL_LAYOUT=deb_system python3 -m pip install',
      '--break-system-packages --no-cache-dir --root-user-action=ignore --disable-pip-version-check --no-warn-script-location',
      `--find-links ${shellQuote(INPUTS_DIRECTORY)}`,
      ...(python.indexUrl ? ['--index-url', shellQuote(python.indexUrl)] : []),
      ...(python.requirements ? ['-r', shellQuote(`${INPUTS_DIRECTORY}/${python.requirements}`)] : []),
      ...python.wheels.map((wheel) => shellQuote(`${INPUTS_DIRECTORY}/${path.posix.normalize(wheel)}`)),
      ...python.packages.map(shellQuote),
    ];
    lines.push('echo "sandcell-step: installing Python packages"', pip.join(' '));
    // Anything pip still put under /usr/local moves to /usr, where the sandbox sees it.
    lines.push(
      'for d in /usr/local/lib/python3*/dist-packages; do if [ -d "$d" ]; then cp -a "$d"/. /usr/lib/python3/dist-packages/; rm -rf "$d"; fi; done',
      'if [ -d /usr/local/bin ]; then find /usr/local/bin -mindepth 1 -maxdepth 1 -exec mv -t /usr/bin {} +; fi',
    );
  }
  description.setup.forEach((command, index) => {
    lines.push(
      `echo ${shellQuote(`sandcell-step: setup command ${index + 1} of ${description.setup.length}`)}`,
      `(cd ${shellQuote(INPUTS_DIRECTORY)} && sh -c ${shellQuote(command)})`,
    );
  });
  lines.push(
    'echo "sandcell-step: cleaning up"',
    'rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /root/.cache',
    'mkdir -p /var/lib/apt/lists/partial',
    // A package that added an account replaced the links with files; the kernel writes the accounts at start.
    ...Object.entries(ACCOUNT_FILE_LINKS).map(([file, target]) => `ln -sfn ${shellQuote(target)} ${shellQuote(file)}`),
  );
  return `${lines.join('\n')}\n`;
}

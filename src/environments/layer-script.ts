/**
 * The layer as one shell script, run as root inside a copy of the runtime
 * root filesystem, in a network namespace of its own. With network, the
 * script first starts the forwarder (the sessions' own, bound in beside the
 * gate's socket) on 127.0.0.1:PROXY_PORT and points apt, pip, curl and git at
 * it; offline, pip reads local files only. Then: Debian packages,
 * then copied files, then Python packages, then the setup commands, then the
 * package caches removed. Inputs are staged beside it under INPUTS_DIRECTORY
 * by their names in the description, which is also the setup commands'
 * working directory. A failing step stops the script with its own message.
 */
import path from 'node:path';
import { ACCOUNT_FILE_LINKS } from '../image/recipe.js';
import { PROXY_PORT, proxyEnvironment } from '../network/sandbox-proxy.js';
import { type EnvironmentDescription, installsPythonPackages } from './description.js';

/** Where the build stages the description's files inside the root filesystem; removed after. */
export const STAGING_DIRECTORY = '/var/tmp/sandcell-environment';
export const INPUTS_DIRECTORY = `${STAGING_DIRECTORY}/inputs`;
/** The Python lock's files, staged from the wheel cache, and the lock itself (python-lock.ts). */
export const WHEELHOUSE_DIRECTORY = `${STAGING_DIRECTORY}/wheelhouse`;
export const LOCK_FILE = `${STAGING_DIRECTORY}/python.lock`;
/** What a resolution leaves: pip's report of what it would install. */
export const REPORT_FILE = `${STAGING_DIRECTORY}/report.json`;
const PINS_FILE = `${STAGING_DIRECTORY}/pins.txt`;
/** The host's CA bundle, staged for a build with network: it trusts what a session with network trusts. */
export const CA_BUNDLE_FILE = `${STAGING_DIRECTORY}/ca-bundle.pem`;
const CA_VARIABLES = ['PIP_CERT', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'];
/** A tmpfs in the build sandbox holding the gate's socket and the forwarder (nothing of it stays in the environment). */
export const BUILD_NETWORK_DIRECTORY = '/run/sandcell';
export const BUILD_GATE_SOCKET = `${BUILD_NETWORK_DIRECTORY}/gate.sock`;
export const BUILD_FORWARDER_MODULE = 'sandcell_network_forwarder';
/** The forwarder's own modules, staged beside it: its epoll relay. */
export const BUILD_FORWARDER_IMPORTS = ['sandcell_relay'];
const FORWARDER_READY = `${BUILD_NETWORK_DIRECTORY}/forwarder-ready`;
/** Tenths of a second the script waits for the forwarder to listen. */
const FORWARDER_WAIT_TENTHS = 300;

export interface LayerNetwork {
  /** The build reaches its gate through the forwarder; false builds offline. */
  gate: boolean;
  /**
   * pip's settings for the index this machine's pip uses (PIP_INDEX_URL, …), for packages named
   * without `python.indexUrl`; none when it is pip's default.
   */
  pipEnvironment?: Record<string, string>;
  /** A lock is staged (LOCK_FILE, its `files` in WHEELHOUSE_DIRECTORY): pip installs exactly it, offline. */
  locked?: { files: number };
}

/** The line a failing setup command's exit status follows. */
export const SETUP_FAILED_MARKER = 'sandcell-setup-failed: ';

/** The step a setup command runs as: `setup command 2 of 3` (1-based). */
export function setupStage(index: number, count: number): string {
  return `setup command ${index + 1} of ${count}`;
}

/** Which setup command (0-based) a step is, if it is one. */
export function setupIndex(stage: string): number | undefined {
  const match = /^setup command (\d+) of \d+$/.exec(stage);
  return match ? Number(match[1]) - 1 : undefined;
}

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

/** Starts the forwarder in the background, waits until it listens, and exports the proxy variables. */
function forwarderLines(): string[] {
  const program = [
    'import sys, threading',
    `sys.path.insert(0, ${JSON.stringify(BUILD_NETWORK_DIRECTORY)})`,
    `import ${BUILD_FORWARDER_MODULE} as forwarder`,
    'forwarder.start(sys.argv[1], int(sys.argv[2]))',
    'open(sys.argv[3], "w").close()',
    'threading.Event().wait()',
  ].join('; ');
  // The build's own loopback has nothing else on it, so no NO_PROXY: 127.0.0.1 URLs go to the gate too.
  const variables = Object.entries(proxyEnvironment()).filter(
    ([name]) => /proxy/i.test(name) && !/^no_proxy$/i.test(name),
  );
  return [
    'echo "sandcell-step: starting the network forwarder"',
    `python3 -B -c ${shellQuote(program)} ${shellQuote(BUILD_GATE_SOCKET)} ${PROXY_PORT} ${shellQuote(FORWARDER_READY)} &`,
    'sandcell_forwarder=$!',
    `trap 'kill "$sandcell_forwarder" 2>/dev/null || true' EXIT`,
    'sandcell_waited=0',
    `while [ ! -e ${shellQuote(FORWARDER_READY)} ]; do`,
    `  if [ "$sandcell_waited" -ge ${FORWARDER_WAIT_TENTHS} ] || ! kill -0 "$sandcell_forwarder" 2>/dev/null; then echo "sandcell: the build's network forwarder did not start" >&2; exit 1; fi`,
    '  sandcell_waited=$((sandcell_waited + 1)); sleep 0.1',
    'done',
    ...variables.map(([name, value]) => `export ${name}=${shellQuote(value)}`),
    ...CA_VARIABLES.map((name) => `export ${name}=${shellQuote(CA_BUNDLE_FILE)}`),
  ];
}

/** The apt-get command line, through the forwarder when the build has a gate. */
function aptCommand(network: LayerNetwork): string {
  const proxy = `http://127.0.0.1:${PROXY_PORT}`;
  return [
    'apt-get -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 -q',
    ...(network.gate ? [`-o Acquire::http::Proxy=${proxy} -o Acquire::https::Proxy=${proxy}`] : []),
  ].join(' ');
}

/** The start of the layer and of a resolution: accounts, the forwarder, the Debian packages, pip. */
function preparationLines(description: EnvironmentDescription, network: LayerNetwork): string[] {
  const lines = ['set -eu', 'export DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8', ...BUILD_ACCOUNTS];
  if (network.gate) lines.push(...forwarderLines());
  const apt = aptCommand(network);
  if (description.debianPackages.length > 0) {
    lines.push(
      'echo "sandcell-step: installing Debian packages"',
      `${apt} update`,
      `${apt} install -y --no-install-recommends ${description.debianPackages.map(shellQuote).join(' ')}`,
    );
  }
  if (installsPythonPackages(description)) {
    // The runtime has pip; a description's packages may have replaced it, and an offline build cannot fetch it.
    lines.push(
      `if ! python3 -m pip --version >/dev/null 2>&1; then echo "sandcell-step: installing pip"; ${apt} update; ${apt} install -y --no-install-recommends python3-pip; fi`,
    );
  }
  return lines;
}

/**
 * `python3 -m pip SUBCOMMAND` with the index it reads: the host pip's settings for packages named
 * without `python.indexUrl`, the inputs as find-links, Debian's install layout (/usr/lib/python3/
 * dist-packages and /usr/bin: the sandbox hides /usr/local); sdists build with the runtime's own
 * setuptools, so nothing is fetched that the lock does not name.
 */
function pip(description: EnvironmentDescription, network: LayerNetwork, subcommand: string): string[] {
  const python = description.python;
  return [
    ...Object.entries(python.indexUrl ? {} : (network.pipEnvironment ?? {})).map(
      ([name, value]) => `${name}=${shellQuote(value)}`,
    ),
    `DEB_PYTHON_INSTALL_LAYOUT=deb_system python3 -m pip ${subcommand}`,
    '--no-cache-dir --disable-pip-version-check --no-build-isolation',
    ...(subcommand === 'install'
      ? ['--break-system-packages --root-user-action=ignore --no-warn-script-location']
      : []),
    `--find-links ${shellQuote(INPUTS_DIRECTORY)}`,
    ...(python.indexUrl ? ['--index-url', shellQuote(python.indexUrl)] : []),
  ];
}

/** What the description asks pip for: its requirements file, its wheels, its packages. */
function pipRequests(description: EnvironmentDescription): string[] {
  const python = description.python;
  return [
    ...(python.requirements ? ['-r', shellQuote(`${INPUTS_DIRECTORY}/${python.requirements}`)] : []),
    ...python.wheels.map((wheel) => shellQuote(`${INPUTS_DIRECTORY}/${path.posix.normalize(wheel)}`)),
    ...python.packages.map(shellQuote),
  ];
}

export function layerScript(description: EnvironmentDescription, network: LayerNetwork): string {
  const lines = preparationLines(description, network);
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
    lines.push('echo "sandcell-step: installing Python packages"');
    if (network.locked) {
      // Exactly the lock's files, checked against its hashes, from the staged cache; then what the
      // description asks finds them installed, and takes its own wheels from the inputs, offline.
      if (network.locked.files > 0) {
        lines.push(
          [
            ...pip(description, network, 'install'),
            `--no-index --no-deps --require-hashes --find-links ${shellQuote(WHEELHOUSE_DIRECTORY)}`,
            `-r ${shellQuote(LOCK_FILE)}`,
          ].join(' '),
        );
      }
      lines.push(
        [
          ...pip(description, network, 'install'),
          `--no-index --find-links ${shellQuote(WHEELHOUSE_DIRECTORY)}`,
          ...pipRequests(description),
        ].join(' '),
      );
    } else {
      lines.push(
        [
          ...pip(description, network, 'install'),
          ...(network.gate ? [] : ['--no-index']),
          ...pipRequests(description),
        ].join(' '),
      );
    }
    // Anything pip still put under /usr/local moves to /usr, where the sandbox sees it.
    lines.push(
      'for d in /usr/local/lib/python3*/dist-packages; do if [ -d "$d" ]; then cp -a "$d"/. /usr/lib/python3/dist-packages/; rm -rf "$d"; fi; done',
      'if [ -d /usr/local/bin ]; then find /usr/local/bin -mindepth 1 -maxdepth 1 -exec mv -t /usr/bin {} +; fi',
    );
  }
  description.setup.forEach((command, index) => {
    lines.push(
      `echo ${shellQuote(`sandcell-step: ${setupStage(index, description.setup.length)}`)}`,
      // Its own exit status, said on a line of its own: the build's error names the command and it.
      'sandcell_status=0',
      `(cd ${shellQuote(INPUTS_DIRECTORY)} && sh -c ${shellQuote(command)}) || sandcell_status=$?`,
      `if [ "$sandcell_status" -ne 0 ]; then echo "${SETUP_FAILED_MARKER}$sandcell_status"; exit "$sandcell_status"; fi`,
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

/** Reads pip's report and writes `name @ url` for what comes from an index (not the inputs' own files). */
const PINS_FROM_REPORT = [
  'import json, sys',
  'report = json.load(open(sys.argv[1]))',
  'with open(sys.argv[2], "w") as pins:',
  '    for item in report["install"]:',
  '        url = item["download_info"]["url"]',
  '        if not url.startswith("file:"):',
  '            pins.write("%s @ %s\\n" % (item["metadata"]["name"], url))',
].join('\n');

/**
 * A resolution, on a throwaway overlay of the runtime: the Debian packages installed as the layer
 * would, then pip's resolver asked what the description's Python packages need beside what is
 * installed (`--dry-run --report`), then exactly those files downloaded to WHEELHOUSE_DIRECTORY.
 */
export function resolveScript(description: EnvironmentDescription, network: LayerNetwork): string {
  const lines = preparationLines(description, network);
  lines.push(
    'echo "sandcell-step: resolving Python packages"',
    [
      ...pip(description, network, 'install'),
      `--dry-run --quiet --report ${shellQuote(REPORT_FILE)}`,
      ...pipRequests(description),
    ].join(' '),
    'echo "sandcell-step: downloading Python packages"',
    `python3 -B -c ${shellQuote(PINS_FROM_REPORT)} ${shellQuote(REPORT_FILE)} ${shellQuote(PINS_FILE)}`,
    `mkdir -p ${shellQuote(WHEELHOUSE_DIRECTORY)}`,
    `if [ -s ${shellQuote(PINS_FILE)} ]; then ${[
      ...pip(description, network, 'download'),
      `--no-deps --quiet -d ${shellQuote(WHEELHOUSE_DIRECTORY)} -r ${shellQuote(PINS_FILE)}`,
    ].join(' ')}; fi`,
  );
  return `${lines.join('\n')}\n`;
}

/** Fetches a lock's files the cache lacks (LOCK_FILE holds just those), checked against their hashes. */
export function fetchScript(description: EnvironmentDescription, network: LayerNetwork): string {
  const lines = ['set -eu', 'export LANG=C.UTF-8', ...BUILD_ACCOUNTS];
  if (network.gate) lines.push(...forwarderLines());
  lines.push(
    'echo "sandcell-step: downloading locked Python packages"',
    `mkdir -p ${shellQuote(WHEELHOUSE_DIRECTORY)}`,
    [
      ...pip(description, network, 'download'),
      `--no-deps --require-hashes --quiet -d ${shellQuote(WHEELHOUSE_DIRECTORY)} -r ${shellQuote(LOCK_FILE)}`,
    ].join(' '),
  );
  return `${lines.join('\n')}\n`;
}

// What `npm run setup` and `npm run setup:docker` share: messages, running a step, Debian packages.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const isRoot = process.getuid?.() === 0;

/** Messages and steps prefixed with the script's name; a failed step ends the script. */
export function setupSteps(name) {
  const say = (text) => process.stdout.write(`\x1b[1m${name}:\x1b[0m ${text}\n`);
  const fail = (text) => {
    process.stderr.write(`${name}: ${text}\n`);
    process.exit(1);
  };
  const run = (command, args, options = {}) => {
    say(`$ ${[command, ...args].join(' ')}`);
    const result = spawnSync(command, args, { stdio: 'inherit', cwd: root, ...options });
    if (result.status !== 0) fail(`\`${command} ${args.join(' ')}\` failed (exit ${result.status ?? result.signal}).`);
  };
  /** apt-get install, non-interactive, without recommends. */
  const aptInstall = (packages) => {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    run('apt-get', ['update', '-qq'], { env });
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { env });
  };
  return { say, fail, run, aptInstall };
}

export function debianPackageInstalled(pkg) {
  try {
    return execFileSync('dpkg-query', ['-W', `-f=\${Status}`, pkg], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).includes('install ok installed');
  } catch {
    return false;
  }
}

/** Whether a Debian package installed `file` (dpkg knows its owner). */
export function debianFileOwned(file) {
  try {
    execFileSync('dpkg-query', ['-S', file], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

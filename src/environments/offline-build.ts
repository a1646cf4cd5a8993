/**
 * `"network": "none"` builds offline: the build has no gate, so apt and pip have nowhere to fetch
 * from. A description that needs them anyway is refused before anything is copied, saying why and
 * what to change; otherwise apt would fail a minute later with "Unable to locate package" (its lists
 * are empty offline), which reads as if the package did not exist.
 *
 * The description's `network` is the build's alone: sessions in the environment get the network
 * their own options give (`--allow-host`), whatever the build had.
 */
import { InvalidInputError } from '../errors.js';
import type { EnvironmentDescription } from './description.js';
import type { EnvironmentInputs } from './inputs.js';
import { INPUT_ARCHIVE } from './python-lock.js';

const LEAVE_OUT =
  'leave out `"network": "none"` (the build then reaches only its apt sources and Python index, through its gate)';

export function refuseOfflineFetches(
  description: EnvironmentDescription,
  inputs: EnvironmentInputs,
  allowHosts: readonly string[] = [],
  /** A lock holds and the wheel cache has its files: packages named come from there. */
  locked = false,
): void {
  if (description.network !== 'none') return;
  const problems: string[] = [];
  if (description.debianPackages.length > 0) {
    problems.push(
      `debianPackages (${shortList(description.debianPackages)}) come from Debian's archive, which an offline build cannot reach: ${LEAVE_OUT}.`,
    );
  }
  const python = description.python;
  if (python.indexUrl !== undefined) {
    problems.push(`python.indexUrl needs the network: ${LEAVE_OUT}, or give the packages as wheels (python.wheels).`);
  }
  const fromNames = python.packages.length > 0 || python.requirements !== undefined;
  // Wheels named are installed in the same pip run, and archives among the inputs are found by name.
  const local = python.wheels.length > 0 || inputs.files.some((file) => INPUT_ARCHIVE.test(file.name));
  if (fromNames && !local && !locked) {
    const named =
      python.packages.length > 0 ? `python.packages (${shortList(python.packages)})` : 'python.requirements';
    problems.push(
      `${named} are looked up in an index, and offline there is none and no wheel to install from: ${LEAVE_OUT}, or give them as wheels (python.wheels), or keep the lock a build with the network wrote and its wheel cache.`,
    );
  }
  if (allowHosts.length > 0) {
    problems.push(`--allow-host widens the build's network, and there is none: ${LEAVE_OUT}.`);
  }
  if (problems.length > 0) {
    throw new InvalidInputError(
      `The description says "network": "none", so the build is offline, but:\n  ${problems.join('\n  ')}`,
    );
  }
}

function shortList(names: readonly string[]): string {
  return names.length > 3 ? `${names.slice(0, 3).join(', ')}, …` : names.join(', ');
}

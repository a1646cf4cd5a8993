/**
 * What an environment adds to the runtime, as `env list`, doctor, `GET
 * /v1/environments` and MCP's list_environments say it: its Debian packages,
 * its Python packages (wheel files, requirements, named packages) and the
 * files it copies in.
 */

import { formatBytes } from '../protocol/format-bytes.js';
import type { EnvironmentDescription } from './description.js';

export interface EnvironmentContents {
  debianPackages: string[];
  /** Wheel file names, the requirements file's name (`-r NAME`) and named packages. */
  pythonPackages: string[];
  /** Where the copied files are in the sandbox. */
  files: string[];
}

export function environmentContents(description: EnvironmentDescription): EnvironmentContents {
  const { python } = description;
  return {
    debianPackages: [...description.debianPackages],
    pythonPackages: [
      ...python.wheels.map((wheel) => wheel.split('/').pop() ?? wheel),
      ...(python.requirements ? [`-r ${python.requirements.split('/').pop()}`] : []),
      ...python.packages,
    ],
    files: description.files.map((file) => file.target),
  };
}

/** One line for people: `adds: PACKAGES; files: PATHS`, or undefined when it adds nothing. */
export function contentsLine(description: EnvironmentDescription): string | undefined {
  const contents = environmentContents(description);
  const parts: string[] = [];
  const packages = [...contents.debianPackages, ...contents.pythonPackages];
  if (packages.length > 0) parts.push(`adds: ${packages.join(' ')}`);
  if (contents.files.length > 0) parts.push(`files: ${contents.files.join(' ')}`);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** `bubblewrap 91.3 MiB, docker 2 GiB`: the backends it is built for, with sizes. */
export function buildsLine(builds: Partial<Record<string, { sizeBytes?: number }>>): string {
  return Object.entries(builds)
    .map(([backend, build]) => `${backend}${build?.sizeBytes ? ` ${formatBytes(build.sizeBytes)}` : ''}`)
    .join(', ');
}

/**
 * A script that reads a file from its own directory fails in the sandbox,
 * where only /mnt/data is: when the missing name is a file beside the script
 * on this machine (and was not uploaded), `sandcell run` says which --upload
 * brings it in.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Execution } from '../session/execution.js';
import { shellQuote } from './shell-quote.js';

/** How the kernels name a file they could not open: Python, Node.js, R. */
const MISSING_FILE = [
  /No such file or directory: '([^']+)'/,
  /ENOENT: no such file or directory, \w+ '([^']+)'/,
  /cannot open file '([^']+)': No such file or directory/,
];

/** The name in /mnt/data the code looked for, when an --upload could have put it there. */
function missingName(execution: Execution): string | undefined {
  const error = execution.error;
  if (!error) return undefined;
  const text = [error.value, ...error.traceback].join('\n');
  for (const pattern of MISSING_FILE) {
    const wanted = pattern.exec(text)?.[1];
    if (wanted === undefined) continue;
    const relative = path.posix.normalize(wanted.startsWith('/mnt/data/') ? wanted.slice('/mnt/data/'.length) : wanted);
    // --upload puts a file at the top of /mnt/data: only a bare name can be brought in that way.
    return relative.includes('/') || relative === '.' || relative === '..' ? undefined : relative;
  }
  return undefined;
}

/**
 * `hint: data.csv is beside the script on this machine; add --upload examples/data.csv`, or
 * undefined. `script` is the file run (undefined or `-`: standard input, so the working directory).
 */
export function missingFileHint(
  execution: Execution,
  script: string | undefined,
  uploaded: ReadonlySet<string>,
): string | undefined {
  const name = missingName(execution);
  if (name === undefined || uploaded.has(name)) return undefined;
  const fromStdin = !script || script === '-';
  const hostPath = path.join(fromStdin ? process.cwd() : path.dirname(path.resolve(script)), name);
  if (!statSync(hostPath, { throwIfNoEntry: false })?.isFile()) return undefined;
  const relative = path.relative(process.cwd(), hostPath);
  const shown = relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : hostPath;
  const where = fromStdin ? 'in the current directory' : 'beside the script';
  return `hint: ${name} is ${where} on this machine, not in the sandbox; add --upload ${shellQuote(shown)}`;
}

/**
 * `--secret-header HOST:HEADER=SOURCE`: a header the gate adds to requests for HOST, read on the
 * host when the command starts. SOURCE is `env:NAME` (an environment variable of sandcell's own
 * process) or `file:PATH` (a file's text, one trailing newline dropped). The value itself is never
 * written on the command line, where `ps` and shell history would show it, and no message quotes it.
 */
import { readFileSync, statSync } from 'node:fs';
import { MAX_SECRET_VALUE_BYTES, type NetworkSecret } from '../network/network-secret.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';

export const SECRET_HEADER_HELP =
  'a header the gate adds to requests for a host the session may reach, so the key never enters the sandbox: ' +
  "HOST:HEADER=env:VARIABLE or HOST:HEADER=file:PATH, e.g. 'api.example.com:Authorization=env:API_AUTHORIZATION' (repeatable)";

const FLAG = /^([^:=\s]+):([^=\s]+)=(env|file):(.+)$/;

export function collectSecretHeaders(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Reads every flag's value from its source; a flag that is malformed or names nothing is a usage error. */
export function readSecretHeaders(
  flag: string,
  flags: readonly string[] | undefined,
  environment: NodeJS.ProcessEnv = process.env,
): NetworkSecret[] | undefined {
  if (!flags || flags.length === 0) return undefined;
  return flags.map((text) => {
    const match = FLAG.exec(text);
    if (!match) {
      throw new CliExit(
        EXIT_USAGE,
        // Only what precedes "=": a key pasted by mistake after it is not echoed into a terminal or a log.
        `${flag} ${JSON.stringify(text.split('=')[0])}=…: write HOST:HEADER=env:VARIABLE or HOST:HEADER=file:PATH (the value itself never goes on the command line).`,
      );
    }
    const [, host = '', header = '', kind, source = ''] = match;
    const value = kind === 'env' ? fromEnvironment(flag, source, environment) : fromFile(flag, source);
    return { host, header, value };
  });
}

function fromEnvironment(flag: string, name: string, environment: NodeJS.ProcessEnv): string {
  const value = environment[name];
  if (value === undefined || value === '')
    throw new CliExit(EXIT_USAGE, `${flag}: the environment variable ${name} is not set.`);
  return value;
}

function fromFile(flag: string, file: string): string {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (error) {
    throw new CliExit(
      EXIT_USAGE,
      `${flag}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
    );
  }
  if (size > MAX_SECRET_VALUE_BYTES + 2) {
    throw new CliExit(EXIT_USAGE, `${flag}: ${file} holds more than ${MAX_SECRET_VALUE_BYTES} bytes.`);
  }
  return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
}

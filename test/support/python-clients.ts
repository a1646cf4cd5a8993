/**
 * The Python clients' tests: a script in test/python/ (or a docs block) run with the Python of one
 * of the environments `npm run setup` installs (test/python/venvs/NAME, from
 * test/python/requirements/NAME.txt), against a real server the test started. A script drives its
 * client as a user would and prints, as its last line of stdout, one JSON object of what it saw;
 * the test asserts on that. A script that raises fails the test with its traceback.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

const PYTHON_DIR = path.resolve(import.meta.dirname, '..', 'python');

export type PythonEnvironment = 'clients' | 'agents';

// biome-ignore lint/suspicious/noExplicitAny: what a script saw, read loosely as JSON
export type Seen = Record<string, any>;

/** The environment's interpreter; a clear error if set-up has not installed it. */
export function pythonOf(environment: PythonEnvironment): string {
  const python = path.join(PYTHON_DIR, 'venvs', environment, 'bin', 'python');
  if (!existsSync(python)) {
    throw new Error(`${python} is missing: \`npm run setup\` installs the Python test clients.`);
  }
  return python;
}

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the environment's Python with `args` in test/python/, `env` over this process's (without its E2B, OpenAI or Azure settings). */
function runPython(
  environment: PythonEnvironment,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Finished> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(E2B_|OPENAI_|AZURE_|HF_)/.test(name)),
  );
  const child = spawn(pythonOf(environment), args, {
    cwd: PYTHON_DIR,
    env: { ...inherited, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs test/python/SCRIPT and resolves to the JSON object it printed last. */
export async function runPythonClient(
  environment: PythonEnvironment,
  script: string,
  env: Record<string, string>,
  { args = [], timeoutMs = 240_000 }: { args?: string[]; timeoutMs?: number } = {},
): Promise<Seen> {
  const { code, signal, stdout, stderr } = await runPython(
    environment,
    [path.join(PYTHON_DIR, script), ...args],
    env,
    timeoutMs,
  );
  const output = `--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-8000)}`;
  if (code !== 0) {
    const why = signal
      ? `was killed (${signal}${signal === 'SIGKILL' ? `, after ${timeoutMs} ms` : ''})`
      : `exited ${code}`;
    throw new Error(`${script} ${why}.\n${output}`);
  }
  try {
    return JSON.parse(stdout.trimEnd().split('\n').at(-1) ?? '') as Seen;
  } catch {
    throw new Error(`${script} did not end with a JSON line.\n${output}`);
  }
}

/** Runs a docs block's Python as written (`python -c CODE`): its exit code and output. */
export function runPythonBlock(
  environment: PythonEnvironment,
  code: string,
  env: Record<string, string>,
  timeoutMs = 180_000,
): Promise<Finished> {
  return runPython(environment, ['-c', code], env, timeoutMs);
}

/** Child processes as the tests start them: a command run to its end, or a sandcell owner to kill. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import path from 'node:path';

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, feeding `input` on stdin, and gathers what it printed. NO_COLOR is set. */
export function runProcess(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/**
 * A separate Node process that creates a session with `sessionOptions` (the
 * built library), prints `{ id, pids }` and then waits, for tests that kill it.
 */
export async function startSessionOwner(
  sessionOptions: Record<string, unknown> = {},
): Promise<{ child: ChildProcessWithoutNullStreams; id: string; pids: number[] }> {
  const entry = path.resolve(import.meta.dirname, '..', '..', 'dist', 'index.js');
  const script = `import { createSession } from ${JSON.stringify(entry)};
const session = await createSession(${JSON.stringify(sessionOptions)});
const usage = await session.usage();
console.log(JSON.stringify({ id: session.id, pids: usage.processIds ?? [] }));
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe' });
  child.stderr.pipe(process.stderr);
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()));
    child.once('exit', () => reject(new Error('the child exited before creating a session')));
  });
  return { child, ...(JSON.parse(line) as { id: string; pids: number[] }) };
}

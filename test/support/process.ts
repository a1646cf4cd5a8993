/** Child processes as the tests start them: a command run to its end, or a sandcell owner to kill. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
    // A child that ends before reading its stdin (EPIPE) says what happened by its exit and output.
    child.stdin.on('error', () => undefined);
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

export interface GroupLeader {
  child: ChildProcessWithoutNullStreams;
  /** Everything printed so far, stdout and stderr apart. */
  output: { stdout: string; stderr: string };
  /** Resolves once `text` has been printed (on either stream). */
  printed(text: string): Promise<void>;
  /** SIGINT to the whole process group, as a terminal sends on Ctrl-C. */
  pressCtrlC(): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts a command as the leader of its own process group, as a shell does
 * for a foreground job, so a signal can reach the whole group at once.
 */
export function startProcessGroup(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): GroupLeader {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    detached: true,
  });
  const output = { stdout: '', stderr: '' };
  const waiting: { text: string; resolve: () => void }[] = [];
  const check = () => {
    for (const waiter of [...waiting]) {
      if (`${output.stdout}${output.stderr}`.includes(waiter.text)) {
        waiting.splice(waiting.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  child.stdout.on('data', (chunk) => {
    output.stdout += chunk;
    check();
  });
  child.stderr.on('data', (chunk) => {
    output.stderr += chunk;
    check();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output,
    exited,
    printed: (text) =>
      new Promise<void>((resolve, reject) => {
        waiting.push({ text, resolve });
        check();
        void exited.then(() =>
          reject(new Error(`exited before printing ${JSON.stringify(text)}: ${JSON.stringify(output)}`)),
        );
      }),
    pressCtrlC: () => process.kill(-(child.pid as number), 'SIGINT'),
  };
}

/**
 * Whether this process may lower an OOM score (CAP_SYS_RESOURCE, bit 24 of
 * CapEff). Root usually may; inside some containers even root may not.
 */
export function canLowerOomScore(): boolean {
  const effective = /^CapEff:\s+([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0';
  return (BigInt(`0x${effective}`) & (1n << 24n)) !== 0n;
}

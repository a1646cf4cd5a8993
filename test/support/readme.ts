/**
 * README.md and its guides under docs/ as test/readme*.test.ts read and run
 * them: their fenced blocks with their `readme-test` markers, a scratch
 * directory where `npx sandcell` resolves to this checkout's CLI, and shell
 * lines run by a real bash.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type Finished, runProcess } from './process.js';

export const root = path.resolve(import.meta.dirname, '..', '..');

export interface ReadmeBlock {
  id: string;
  language: string;
  code: string;
  /** The file it is in, relative to the checkout: README.md or docs/NAME.md. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
}

const MARKER = /^<!-- readme-test: ([a-z0-9-]+) -->$/;

/**
 * Pages under docs/ that are design documents, not guides: their fenced blocks are diagrams and
 * wire examples, not commands to run, so they carry no markers and are not read here. Every other
 * docs/*.md is a guide the README links to, and its blocks are tested like the README's.
 */
export const DESIGN_DOCS = ['docs/architecture.md', 'docs/kernel-protocol.md'];

/** README.md and the guides under docs/ (every docs/*.md but DESIGN_DOCS), relative to the checkout. */
export function readmeFiles(): string[] {
  const guides = readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`)
    .filter((file) => !DESIGN_DOCS.includes(file))
    .sort();
  return ['README.md', ...guides];
}

/** The fenced blocks of one file; a block without a marker on the line above is an error naming its file and line. */
function blocksOf(file: string): ReadmeBlock[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const fence = lines[index]?.match(/^```(\S*)$/);
    if (!fence) continue;
    const end = lines.indexOf('```', index + 1);
    if (end < 0) throw new Error(`${file}:${index + 1}: a fenced block that never closes`);
    const id = lines[index - 1]?.match(MARKER)?.[1];
    if (!id) {
      throw new Error(
        `${file}:${index + 1}: a fenced block without a <!-- readme-test: ID --> marker above it (see test/readme.test.ts)`,
      );
    }
    blocks.push({
      id,
      language: fence[1] ?? '',
      code: `${lines.slice(index + 1, end).join('\n')}\n`,
      file,
      line: index + 1,
    });
    index = end;
  }
  return blocks;
}

/**
 * Every fenced block of README.md and of the guides under docs/ (readmeFiles()), in that order; a
 * block without a marker, or an id used twice (across all the files), is an error naming where.
 */
export function readmeBlocks(): ReadmeBlock[] {
  const blocks = readmeFiles().flatMap(blocksOf);
  const seen = new Map<string, ReadmeBlock>();
  for (const block of blocks) {
    const first = seen.get(block.id);
    if (first) {
      throw new Error(
        `${block.file}:${block.line}: the id readme-test: ${block.id} is taken by ${first.file}:${first.line} (ids are unique across README.md and docs/)`,
      );
    }
    seen.set(block.id, block);
  }
  return blocks;
}

/** The block marked `readme-test: ID`, in README.md or a guide under docs/; none fails the test that asks. */
export function readmeBlock(id: string): ReadmeBlock {
  const found = readmeBlocks().find((candidate) => candidate.id === id);
  if (!found) throw new Error(`neither README.md nor docs/ has a block marked readme-test: ${id}`);
  return found;
}

/** Shell commands of a block: continuation lines joined, blank and comment-only lines dropped. */
export function commandsOf(code: string): string[] {
  return code
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));
}

/**
 * A directory standing in for the clone's root, as the README's commands
 * assume: `examples/` is the checkout's, and `npx sandcell` finds this
 * checkout's CLI in `node_modules/.bin` (npx never reaches the registry for
 * it), so what the commands write lands here, not in the checkout.
 */
export function scratchClone(): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-'));
  symlinkSync(path.join(root, 'examples'), path.join(directory, 'examples'));
  mkdirSync(path.join(directory, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(path.join(root, 'bin', 'sandcell.js'), path.join(directory, 'node_modules', '.bin', 'sandcell'));
  return directory;
}

/** Runs shell code with bash (`set -e -o pipefail`), as a reader pasting it would. */
export function runShell(
  code: string,
  options: { cwd: string; env?: Record<string, string>; input?: string },
): Promise<Finished> {
  return runProcess('bash', ['-e', '-o', 'pipefail', '-c', code], options);
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

export interface RunningServer {
  port: number;
  child: ChildProcess;
  output(): string;
  /** SIGTERM to the whole process group (bash, npx, the server), then waits for it to end. */
  stop(): Promise<void>;
}

/**
 * Starts a README line that runs `sandcell serve` (through bash, so its
 * `$(…)` and variables work) on a free port given as SANDCELL_PORT, and
 * resolves once /healthz answers; rejects with its output if it exits first.
 */
export async function startServeLine(
  line: string,
  options: { cwd: string; env?: Record<string, string> },
): Promise<RunningServer> {
  const port = await freePort();
  const child = spawn('bash', ['-c', line], {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: '1', ...options.env, SANDCELL_PORT: String(port) },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = once(child, 'exit');
  const server: RunningServer = {
    port,
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGTERM');
      await exited;
    },
  };
  for (;;) {
    if (child.exitCode !== null) throw new Error(`\`${line}\` exited with ${child.exitCode}:\n${output}`);
    const healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) return server;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The README's commands talk to localhost:8080; a test's server listens on a free port instead. */
export function onPort(code: string, port: number): string {
  return code.replaceAll('localhost:8080', `localhost:${port}`).replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
}

/**
 * The README's e2b-serve block, then a script with the environment it left, as one bash program
 * whose stdout is the script's alone: the block's server on `port` (not 8080) through this
 * checkout's CLI, waited for, the script run, the server stopped, the script's exit status kept.
 * Run it as `bash -c` from the checkout's root.
 */
export function e2bServeThen(port: number, script: string): string {
  const harness = [
    readmeBlock('e2b-serve')
      .code.replaceAll('npx sandcell', `${JSON.stringify(process.execPath)} bin/sandcell.js`)
      .replaceAll('8080', String(port)),
    // The test's own lines: wait for the server, run the script, stop the server, keep the script's exit code.
    `for attempt in $(seq 600); do curl -sf http://127.0.0.1:${port}/healthz >/dev/null && break; sleep 0.1; done`,
    `${JSON.stringify(process.execPath)} ${JSON.stringify(script)} >&3`,
    'status=$?',
    'kill %1',
    'wait',
    'exit $status',
  ].join('\n');
  return `exec 3>&1 1>/dev/null\n${harness}`;
}

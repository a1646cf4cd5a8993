/**
 * What an agent command (`chat`, `ask`) runs against: the process's streams,
 * and the backend its flags name. A caller may give its own, so the commands'
 * own logic (prompts, rendering, exit codes) runs in-process on the scripted
 * backend in tests; the CLI passes the process's.
 */
import type { SandboxBackend } from '../backends/spec.js';

export interface CommandIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Used instead of the one --backend and --rootfs name. @default the flags' backend */
  backend?: SandboxBackend;
}

export function processIo(): CommandIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

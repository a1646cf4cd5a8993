/**
 * What the contracts need to say in each language: a few snippets per
 * language, so that a language joins the context and security contracts by
 * being added to CONTRACT_LANGUAGES (once its kernel is in the runtime).
 * Values are checked on stdout, which every language has (bash has no
 * results).
 */
import type { Language } from '../../src/session/languages.js';

export interface LanguageSnippets {
  language: Language;
  /** Sets variable `name` to the integer `value`, printing nothing. */
  assign(name: string, value: number): string;
  /** Prints variable `name`'s value and a newline. */
  print(name: string): string;
  /** Prints the kernel's own process id and a newline. */
  printPid: string;
  /** Runs until killed: ignores SIGINT (the interrupt) and keeps going. */
  ignoreInterrupt: string;
  /** Sleeps a long time, in a way the interrupt stops. */
  sleepLong: string;
  /** Kills its own kernel with SIGKILL. */
  killSelf: string;
  /** Prints `READ` when the file at `path` can be read, else `blocked`. */
  tryRead(path: string): string;
  /** Prints `WROTE` when a file can be created at `path`, else `blocked`. */
  tryWrite(path: string): string;
  /** Prints `CONNECTED` when a TCP connection to host:port succeeds within 2 s, else `blocked`. */
  tryConnect(host: string, port: number): string;
  /** Allocates memory until something stops it. */
  hogMemory: string;
}

export const PYTHON: LanguageSnippets = {
  language: 'python',
  assign: (name, value) => `${name} = ${value}`,
  print: (name) => `print(${name})`,
  printPid: 'import os\nprint(os.getpid())',
  ignoreInterrupt:
    'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)',
  sleepLong: 'import time\ntime.sleep(600)',
  killSelf: 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)',
  tryRead: (path) =>
    `try:\n    open(${JSON.stringify(path)}).read()\n    print("READ")\nexcept OSError:\n    print("blocked")`,
  tryWrite: (path) =>
    `try:\n    open(${JSON.stringify(path)}, "w").write("x")\n    print("WROTE")\nexcept OSError:\n    print("blocked")`,
  tryConnect: (host, port) =>
    `import socket\ntry:\n    socket.create_connection((${JSON.stringify(host)}, ${port}), timeout=2).close()\n    print("CONNECTED")\nexcept OSError:\n    print("blocked")`,
  hogMemory: 'hog = []\nwhile True:\n    hog.append(b"x" * (32 << 20))',
};

const JAVASCRIPT: LanguageSnippets = {
  language: 'javascript',
  assign: (name, value) => `let ${name} = ${value};`,
  print: (name) => `console.log(${name})`,
  printPid: 'console.log(process.pid)',
  // spawnSync blocks the kernel's thread in C++, and the child ignores SIGINT: nothing ends the cell.
  ignoreInterrupt: `require('node:child_process').execSync("trap '' INT; while :; do sleep 0.05; done")`,
  sleepLong: 'await new Promise((resolve) => setTimeout(resolve, 600_000))',
  killSelf: "process.kill(process.pid, 'SIGKILL')",
  tryRead: (path) =>
    `try { require('node:fs').readFileSync(${JSON.stringify(path)}); console.log('READ') } catch { console.log('blocked') }`,
  tryWrite: (path) =>
    `try { require('node:fs').writeFileSync(${JSON.stringify(path)}, 'x'); console.log('WROTE') } catch { console.log('blocked') }`,
  tryConnect: (host, port) => `await new Promise((resolve) => {
  const socket = require('node:net').connect({ host: ${JSON.stringify(host)}, port: ${port} });
  const done = (word) => { clearTimeout(timer); socket.destroy(); console.log(word); resolve(); };
  const timer = setTimeout(() => done('blocked'), 2000);
  socket.on('connect', () => done('CONNECTED'));
  socket.on('error', () => done('blocked'));
})`,
  hogMemory: 'const hog = []; while (true) hog.push(Buffer.alloc(32 << 20, 1));',
};

const TYPESCRIPT: LanguageSnippets = {
  ...JAVASCRIPT,
  language: 'typescript',
  assign: (name, value) => `let ${name}: number = ${value};`,
  hogMemory: 'const hog: Buffer[] = []; while (true) hog.push(Buffer.alloc(32 << 20, 1));',
};

/** A bash word for `text`, quoted. */
function bashQuoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

const BASH: LanguageSnippets = {
  language: 'bash',
  assign: (name, value) => `${name}=${value}`,
  print: (name) => `echo "$${name}"`,
  // The kernel is the shell's parent (sandcell_bash_kernel.py), the process a context's pid names.
  printPid: 'echo $PPID',
  ignoreInterrupt: "trap '' INT; while :; do sleep 0.05; done",
  sleepLong: 'sleep 600',
  killSelf: 'kill -9 $PPID',
  tryRead: (path) => `cat ${bashQuoted(path)} >/dev/null 2>&1 && echo READ || echo blocked`,
  tryWrite: (path) => `(echo x > ${bashQuoted(path)}) 2>/dev/null && echo WROTE || echo blocked`,
  tryConnect: (host, port) =>
    `timeout 3 bash -c ${bashQuoted(`exec 3<>/dev/tcp/${host}/${port}`)} 2>/dev/null && echo CONNECTED || echo blocked`,
  hogMemory: 'hog=x; while :; do hog="$hog$hog"; done',
};

const R: LanguageSnippets = {
  language: 'r',
  assign: (name, value) => `${name} <- ${value}`,
  print: (name) => `cat(${name}, "\\n", sep = "")`,
  printPid: 'cat(Sys.getpid(), "\\n", sep = "")',
  // system() waits in C for a child that ignores SIGINT.
  ignoreInterrupt: `invisible(system("trap '' INT; while :; do sleep 0.05; done"))`,
  sleepLong: 'Sys.sleep(600)',
  killSelf: 'invisible(tools::pskill(Sys.getpid(), tools::SIGKILL))',
  tryRead: (path) =>
    `cat(if (inherits(try(suppressWarnings(readBin(${JSON.stringify(path)}, "raw", 1L)), silent = TRUE), "try-error")) "blocked" else "READ", "\\n", sep = "")`,
  tryWrite: (path) =>
    `cat(if (inherits(try(suppressWarnings(writeLines("x", ${JSON.stringify(path)})), silent = TRUE), "try-error")) "blocked" else "WROTE", "\\n", sep = "")`,
  tryConnect: (host, port) =>
    `connection <- tryCatch(suppressWarnings(socketConnection(${JSON.stringify(host)}, ${port}, open = "r+b", timeout = 2)), error = function(e) NULL)\nif (is.null(connection)) cat("blocked\\n") else { close(connection); cat("CONNECTED\\n") }`,
  hogMemory: 'hog <- list()\nrepeat hog[[length(hog) + 1L]] <- numeric(4e6) + 1',
};

/** The languages every backend's contracts run. */
export const CONTRACT_LANGUAGES: LanguageSnippets[] = [PYTHON, JAVASCRIPT, TYPESCRIPT, BASH, R];

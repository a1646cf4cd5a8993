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

/** The languages every backend's contracts run; the coordinator adds each as its kernel lands. */
export const CONTRACT_LANGUAGES: LanguageSnippets[] = [PYTHON];

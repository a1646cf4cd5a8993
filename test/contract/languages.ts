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
};

/** The languages every backend's contracts run; the coordinator adds each as its kernel lands. */
export const CONTRACT_LANGUAGES: LanguageSnippets[] = [PYTHON];

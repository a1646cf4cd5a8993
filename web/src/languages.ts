/** The languages a notebook cell can run in, and how the UI names what ran a piece of code. */
import type { CodeLanguage } from '../../src/protocol/index';

export type CellLanguage = Exclude<CodeLanguage, 'shell'>;

export const CELL_LANGUAGES: { value: CellLanguage; label: string; placeholder: string }[] = [
  { value: 'python', label: 'Python', placeholder: 'Python, e.g. import pandas as pd' },
  { value: 'javascript', label: 'JavaScript', placeholder: 'JavaScript, e.g. [1, 2, 3].map((x) => x * 2)' },
  { value: 'typescript', label: 'TypeScript', placeholder: 'TypeScript, e.g. const n: number = 42' },
  { value: 'bash', label: 'Bash', placeholder: 'bash, e.g. ls -la' },
  { value: 'r', label: 'R', placeholder: 'R, e.g. summary(c(1, 4, 9))' },
];

/** A code step's language as a label: absent means python (transcripts from before languages). */
export function languageLabel(language: CodeLanguage | undefined): string {
  if (language === 'shell') return 'Shell';
  return CELL_LANGUAGES.find((entry) => entry.value === (language ?? 'python'))?.label ?? 'Python';
}

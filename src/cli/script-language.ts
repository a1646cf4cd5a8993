/** Which language `sandcell run` runs a script in: `--language`, else the file's extension, else Python. */
import path from 'node:path';
import { isLanguage, LANGUAGES, type Language } from '../session/languages.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';

/** Extensions as users name their scripts; R's is case-insensitive by habit (`.R` and `.r`). */
const EXTENSION_LANGUAGES: Record<string, Language> = {
  '.py': 'python',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.sh': 'bash',
  '.bash': 'bash',
  '.r': 'r',
};

/** `--language` checked against the languages sandcell speaks; a usage error otherwise. */
export function parseLanguageOption(value: string | undefined): Language | undefined {
  if (value === undefined) return undefined;
  const language = value.toLowerCase();
  if (isLanguage(language)) return language;
  throw new CliExit(EXIT_USAGE, `--language must be one of ${LANGUAGES.join(', ')}; got ${JSON.stringify(value)}.`);
}

/**
 * The language for `file`: the option when given; otherwise the extension's, and Python for
 * standard input and a file without an extension. An extension sandcell does not know (`.rb`) is
 * refused rather than run as Python: the error would be a confusing SyntaxError.
 */
export function scriptLanguage(file: string | undefined, option: string | undefined): Language {
  const chosen = parseLanguageOption(option);
  if (chosen) return chosen;
  if (!file || file === '-') return 'python';
  const extension = path.extname(file);
  if (!extension) return 'python';
  const language = EXTENSION_LANGUAGES[extension.toLowerCase()];
  if (language) return language;
  throw new CliExit(
    EXIT_USAGE,
    `Cannot run ${file}: unknown extension ${extension}; pass --language ${LANGUAGES.join('|')} to say which language it is.`,
  );
}

/** How a language is named to a user (prompts, banners). */
export const LANGUAGE_NAMES: Record<Language, string> = {
  python: 'Python',
  javascript: 'JavaScript',
  typescript: 'TypeScript',
  bash: 'bash',
  r: 'R',
};

/** `sandcell doctor`'s languages: which kernels a session on this backend can start, each with its version or its fix. */
import { LanguageUnavailableError } from '../errors.js';
import { LANGUAGES, type Language } from '../session/languages.js';
import type { Session } from '../session/session.js';
import { LANGUAGE_NAMES } from './script-language.js';

/** A shell line that prints the runtime's version, the way its own tools say it. */
const VERSION_COMMANDS: Record<Language, string> = {
  python: 'python3 --version 2>&1',
  javascript: 'node --version',
  typescript: 'node --version',
  bash: 'echo "$BASH_VERSION"',
  r: 'R --version | head -n 1',
};

type Add = (level: 'ok' | 'warn' | 'fail', title: string, detail?: string) => void;

/**
 * Starts a context of each language in `session` and removes it again. A
 * missing language is a warning (Python is what sessions need), with the
 * error's own words on how to add it.
 */
export async function checkLanguages(session: Session, add: Add, label: string): Promise<void> {
  for (const language of LANGUAGES) {
    const title = `${label}language ${LANGUAGE_NAMES[language]}`;
    try {
      if (language !== 'python') {
        const context = await session.createContext({ language });
        await session.removeContext(context.id);
      }
      const version = await session.commands.run(VERSION_COMMANDS[language], { timeoutMs: 30_000 });
      const text = version.exitCode === 0 ? version.stdout.trim().split('\n')[0] : '';
      add('ok', `${title}: available${text ? ` (${language === 'typescript' ? `Node.js ${text}` : text})` : ''}`);
    } catch (error) {
      if (error instanceof LanguageUnavailableError) add('warn', `${title}: not available`, error.message);
      else add('warn', `${title}: could not start`, (error as Error).message);
    }
  }
}

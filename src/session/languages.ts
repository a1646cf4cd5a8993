/**
 * The languages a context can speak, how a context is named, and what a user
 * installs when a language's runtime is missing from the sandbox.
 */
import { InvalidInputError, LanguageUnavailableError } from '../errors.js';

export const LANGUAGES = ['python', 'javascript', 'typescript', 'bash', 'r'] as const;

export type Language = (typeof LANGUAGES)[number];

/** The context every session starts with, and the one a run without `context` or `language` uses. */
export const DEFAULT_CONTEXT = 'python';

/** Context ids as the sandbox protocol allows them (docs/kernel-protocol.md). */
export const CONTEXT_ID = /^[A-Za-z0-9_.-]{1,64}$/;

export function isLanguage(value: unknown): value is Language {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}

/** `value` as a Language, or an InvalidInputError naming the choices. */
export function parseLanguage(value: unknown): Language {
  if (isLanguage(value)) return value;
  throw new InvalidInputError(`\`language\` must be one of ${LANGUAGES.join(', ')}; got ${JSON.stringify(value)}.`);
}

/** What a language needs inside the sandbox, in the words of the Debian packages that provide it. */
const RUNTIME_PACKAGES: Record<Language, string> = {
  python: 'Python 3 with IPython (python3, python3-ipython)',
  javascript: 'Node.js (the nodejs package)',
  typescript: 'Node.js (the nodejs package; TypeScript is transpiled by sandcell)',
  bash: 'bash (the bash package)',
  r: 'R with ggplot2 and jsonlite (r-base-core, r-cran-ggplot2, r-cran-jsonlite)',
};

/** The error for a language whose runtime this sandbox lacks; `available` are those it has. */
export function languageUnavailable(
  language: Language,
  available: readonly string[],
  imageEnvironment?: string,
): LanguageUnavailableError {
  if (imageEnvironment !== undefined) {
    return new LanguageUnavailableError(
      language,
      `The environment ${imageEnvironment} is an image without ${language} (it has ${available.join(', ') || 'none'}). ` +
        `${language} needs ${RUNTIME_PACKAGES[language]} on its PATH: add it to the image's Dockerfile and register it again ` +
        `(\`sandcell env add ${imageEnvironment} --image …\` or \`sandcell env build Dockerfile --name ${imageEnvironment}\`).`,
    );
  }
  return new LanguageUnavailableError(
    language,
    `This sandbox has no ${language} runtime (it has ${available.join(', ') || 'none'}). ${language} needs ` +
      `${RUNTIME_PACKAGES[language]}: \`npm run setup\` installs the runtime packages on this machine for ` +
      'bubblewrap, and `sandcell image build` rebuilds the runtime image (Docker) or root filesystem ' +
      '(`--backend bubblewrap`, used with `--rootfs runtime`). `sandcell doctor` says which languages it finds.',
  );
}

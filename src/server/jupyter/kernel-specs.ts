/**
 * One kernelspec per sandcell language, and `python3-<name>` per built
 * environment (Python in that environment). A spec names the language a kernel's
 * context speaks and what `kernel_info_reply` says about it; `argv` is empty
 * (nothing is launched on the host) but must be an array, as clients index it.
 */
import { ENVIRONMENT_NAME_PATTERN } from '../../environments/types.js';
import type { Language } from '../../session/languages.js';

export interface LanguageInfo {
  name: string;
  version: string;
  mimetype: string;
  file_extension: string;
  pygments_lexer: string;
  codemirror_mode: string | Record<string, unknown>;
  nbconvert_exporter?: string;
}

export interface KernelSpecDefinition {
  name: string;
  language: Language;
  displayName: string;
  implementation: string;
  languageInfo: LanguageInfo;
  /** The environment its session runs in; the server's default when absent. */
  environment?: string;
}

/** Kernelspecs of environments: `python3-<environment>`. */
const ENVIRONMENT_SPEC_PREFIX = 'python3-';

export const DEFAULT_KERNEL_NAME = 'python3';

export const KERNEL_SPECS: readonly KernelSpecDefinition[] = [
  {
    name: 'python3',
    language: 'python',
    displayName: 'Python 3 (sandcell)',
    implementation: 'ipython',
    languageInfo: {
      name: 'python',
      version: '3',
      mimetype: 'text/x-python',
      file_extension: '.py',
      pygments_lexer: 'ipython3',
      codemirror_mode: { name: 'ipython', version: 3 },
      nbconvert_exporter: 'python',
    },
  },
  {
    name: 'javascript',
    language: 'javascript',
    displayName: 'JavaScript (sandcell)',
    implementation: 'sandcell-javascript',
    languageInfo: {
      name: 'javascript',
      version: '',
      mimetype: 'text/javascript',
      file_extension: '.js',
      pygments_lexer: 'javascript',
      codemirror_mode: 'javascript',
    },
  },
  {
    name: 'typescript',
    language: 'typescript',
    displayName: 'TypeScript (sandcell)',
    implementation: 'sandcell-typescript',
    languageInfo: {
      name: 'typescript',
      version: '',
      mimetype: 'text/typescript',
      file_extension: '.ts',
      pygments_lexer: 'typescript',
      codemirror_mode: { name: 'javascript', typescript: true },
    },
  },
  {
    name: 'bash',
    language: 'bash',
    displayName: 'Bash (sandcell)',
    implementation: 'sandcell-bash',
    languageInfo: {
      name: 'bash',
      version: '',
      mimetype: 'text/x-sh',
      file_extension: '.sh',
      pygments_lexer: 'bash',
      codemirror_mode: 'shell',
    },
  },
  {
    name: 'ir',
    language: 'r',
    displayName: 'R (sandcell)',
    implementation: 'sandcell-r',
    languageInfo: {
      name: 'R',
      version: '',
      mimetype: 'text/x-r-source',
      file_extension: '.r',
      pygments_lexer: 'r',
      codemirror_mode: 'r',
    },
  },
];

/** A language's spec, or `python3-<environment>` for any well-formed environment name (whether it is built is the session's to say). */
export function findKernelSpec(name: string): KernelSpecDefinition | undefined {
  const spec = KERNEL_SPECS.find((candidate) => candidate.name === name);
  if (spec || !name.startsWith(ENVIRONMENT_SPEC_PREFIX)) return spec;
  const environment = name.slice(ENVIRONMENT_SPEC_PREFIX.length);
  return ENVIRONMENT_NAME_PATTERN.test(environment) ? environmentKernelSpec(environment) : undefined;
}

/** Python in a built environment. */
export function environmentKernelSpec(environment: string): KernelSpecDefinition {
  const python = KERNEL_SPECS[0] as KernelSpecDefinition;
  return {
    ...python,
    name: `${ENVIRONMENT_SPEC_PREFIX}${environment}`,
    displayName: `Python 3 (sandcell, ${environment})`,
    environment,
  };
}

/** The spec as `/api/kernelspecs` answers it. */
export function presentKernelSpec(spec: KernelSpecDefinition) {
  return {
    name: spec.name,
    spec: {
      argv: [],
      env: {},
      display_name: spec.displayName,
      language: spec.languageInfo.name,
      interrupt_mode: 'message',
      metadata: {},
    },
    resources: {},
  };
}

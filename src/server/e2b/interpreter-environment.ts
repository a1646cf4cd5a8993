/**
 * Environment variables for one execution (`env_vars`, and the sandbox's `envVars`), in every
 * language: a small run before the code sets them in the context's kernel, saving what was
 * there, and one after restores it — the kernel's own environment, so subprocesses the code
 * starts see them too. The snippets are separate runs in the same context, queued around the
 * code, so the code's line numbers and tracebacks stay its own; they show no output and leave
 * no visible names behind (Python's `_`, R's `ls()`, JavaScript's globals are untouched).
 */
import type { Language } from '../../session/languages.js';
import { checkEnvironment } from '../../session/sandbox-inputs.js';

export interface EnvironmentSnippets {
  set: string;
  restore: string;
}

/** Names are shell variable names (checkEnvironment): safe to write bare in every language. */
export function environmentSnippets(language: Language, variables: Record<string, string>): EnvironmentSnippets {
  const names = Object.keys(variables);
  switch (language) {
    case 'python':
      return {
        set:
          `setattr(__import__('os'), '_sandcell_saved_environ', {name: __import__('os').environ.get(name) for name in ${JSON.stringify(names)}})\n` +
          `__import__('os').environ.update(${JSON.stringify(variables)})`,
        restore:
          "(lambda os, saved: ([os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value) for name, value in saved.items()], None)[1])(__import__('os'), __import__('os').__dict__.pop('_sandcell_saved_environ', {}))",
      };
    case 'javascript':
    case 'typescript':
      return {
        set:
          `globalThis[Symbol.for('sandcell.savedEnvironment')] = Object.fromEntries(${JSON.stringify(names)}.map((name) => [name, process.env[name]]));\n` +
          `Object.assign(process.env, ${JSON.stringify(variables)});\nvoid 0;`,
        restore:
          "for (const [name, value] of Object.entries(globalThis[Symbol.for('sandcell.savedEnvironment')] ?? {})) { if (value === undefined) delete process.env[name]; else process.env[name] = value; }\n" +
          "delete globalThis[Symbol.for('sandcell.savedEnvironment')];\nvoid 0;",
      };
    case 'bash':
      return {
        set: `__sandcell_saved_environ="$(declare -p ${names.join(' ')} 2>/dev/null)"\n${names
          .map((name) => `export ${name}=${bashQuote(variables[name] ?? '')}`)
          .join('\n')}`,
        restore: `unset ${names.join(' ')}\neval "$__sandcell_saved_environ"\nunset __sandcell_saved_environ`,
      };
    case 'r':
      return {
        set:
          `.sandcell_saved_environ <- Sys.getenv(c(${names.map((name) => JSON.stringify(name)).join(', ')}), unset = NA, names = TRUE)\n` +
          `invisible(Sys.setenv(${names.map((name) => `${name} = ${JSON.stringify(variables[name])}`).join(', ')}))`,
        restore:
          'invisible(local(for (name in names(.sandcell_saved_environ)) ' +
          '{ value <- .sandcell_saved_environ[[name]]; if (is.na(value)) Sys.unsetenv(name) else do.call(Sys.setenv, as.list(.sandcell_saved_environ[name])) }))\n' +
          'rm(.sandcell_saved_environ)',
      };
  }
}

/** The sandbox's variables under the execution's own (which win), checked; undefined when there are none. */
export function executionEnvironment(
  sandboxVariables: Record<string, string> | undefined,
  executionVariables: unknown,
): Record<string, string> | undefined {
  const own = checkEnvironment(executionVariables ?? undefined);
  const merged = { ...(sandboxVariables ?? {}), ...(own ?? {}) };
  return Object.keys(merged).length > 0 ? checkEnvironment(merged) : undefined;
}

/** A bash word that is exactly `value`: single quotes, each inner quote closed, escaped and reopened. */
function bashQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

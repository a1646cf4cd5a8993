/**
 * The description file (`sandcell.env.json`): what an environment adds to the
 * runtime. Paths in it are relative to the file's directory; every list and
 * string is bounded, and anything unknown is refused, so a typo fails the
 * build instead of being silently ignored.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { InvalidInputError } from '../errors.js';
import { MAX_ALLOW_RULES, resolveNetworkOption } from '../network/network-option.js';
import { ENVIRONMENT_NAME_PATTERN } from './types.js';

/** Largest description file read. */
export const MAX_DESCRIPTION_BYTES = 256 * 1024;
const MAX_LIST = 500;

const DEBIAN_PACKAGE = /^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+:~-]+)?$/;
const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/**
 * Copied files go under /usr: bubblewrap shows a root filesystem's /usr (and
 * a few /etc files) only, so that is the one place both backends show them.
 * /usr/local is hidden in the sandbox.
 */
function isFileTarget(target: string): boolean {
  return target.startsWith('/usr/') && target !== '/usr/local' && !target.startsWith('/usr/local/');
}

const relativePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((value) => !value.includes('\0'), 'must not contain NUL');

const schema = z
  .object({
    name: z
      .string()
      .regex(ENVIRONMENT_NAME_PATTERN, 'lower-case letters, digits and -, starting with a letter, at most 40'),
    description: z.string().max(1000).optional(),
    debianPackages: z
      .array(z.string().regex(DEBIAN_PACKAGE, 'a Debian package name (optionally =version)'))
      .max(MAX_LIST)
      .default([]),
    python: z
      .object({
        requirements: relativePath.optional(),
        wheels: z.array(relativePath).max(MAX_LIST).default([]),
        packages: z.array(z.string().min(1).max(500)).max(MAX_LIST).default([]),
        indexUrl: z.string().url().max(2000).optional(),
      })
      .strict()
      .default({ wheels: [], packages: [] }),
    files: z
      .array(
        z
          .object({
            source: relativePath,
            target: z
              .string()
              .max(4096)
              .refine(
                (value) => path.posix.isAbsolute(value) && path.posix.normalize(value) === value && value !== '/',
                {
                  message: 'must be an absolute, normalised path other than /',
                },
              )
              .refine(isFileTarget, {
                message: 'must be under /usr (e.g. /usr/share/NAME), not /usr/local: the one place both backends show',
              }),
          })
          .strict(),
      )
      .max(MAX_LIST)
      .default([]),
    setup: z.array(z.string().min(1).max(8192)).max(100).default([]),
    /**
     * What the build may reach beyond what it needs (its apt sources, its Python index): a session's
     * `network` option, checked the same way; `'none'` builds offline. Not the sessions' network.
     */
    network: z
      .union([
        z.literal('none'),
        z
          .object({ allow: z.array(z.string().max(300)).min(1).max(MAX_ALLOW_RULES) })
          .strict()
          .transform((value, context) => {
            try {
              return { allow: resolveNetworkOption(value)?.allow ?? [] };
            } catch (error) {
              context.addIssue({ code: 'custom', message: (error as Error).message });
              return z.NEVER;
            }
          }),
      ])
      .optional(),
    /**
     * Modules every session starts with imported, as `import NAME` in a first cell: loaded, and the
     * top-level name bound (`import a.b` binds `a`), so code uses them without importing.
     */
    warmImports: z.array(z.string().regex(MODULE_NAME, 'a Python module name')).max(100).default([]),
    /** `gvisor`: every session of it runs on the gVisor backend (its own kernel, the Sentry), whatever the server's. */
    isolation: z.enum(['gvisor']).optional(),
    env: z
      .record(
        z.string().regex(VARIABLE_NAME, 'a variable name'),
        z
          .string()
          .max(32_768)
          .refine((value) => !value.includes('\0')),
      )
      .default({})
      .refine((value) => Object.keys(value).length <= 200, 'at most 200 variables'),
  })
  .strict();

export type EnvironmentDescription = z.infer<typeof schema>;

/** A parsed description and the directory its relative paths start from. */
export interface LoadedDescription {
  description: EnvironmentDescription;
  /** The description file's directory (absolute). */
  baseDirectory: string;
  /** The description file itself (absolute). */
  file: string;
}

/** Validates a description already parsed from JSON; the message lists every problem with its field. */
export function parseDescription(value: unknown, origin = 'the environment description'): EnvironmentDescription {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(top)'}: ${issue.message}`);
  throw new InvalidInputError(`${origin} is not valid:\n  ${problems.join('\n  ')}`);
}

/** Reads and validates a description file (bounded in size). */
export async function loadDescription(file: string): Promise<LoadedDescription> {
  const absolute = path.resolve(file);
  const info = await stat(absolute).catch((error: unknown) => {
    throw new InvalidInputError(`Cannot read ${absolute}: ${(error as Error).message}`);
  });
  if (!info.isFile()) throw new InvalidInputError(`${absolute} is not a file.`);
  if (info.size > MAX_DESCRIPTION_BYTES) {
    throw new InvalidInputError(
      `${absolute} is ${info.size} bytes; a description is at most ${MAX_DESCRIPTION_BYTES}.`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(await readFile(absolute, 'utf8'));
  } catch (error) {
    throw new InvalidInputError(`${absolute} is not JSON: ${(error as Error).message}`);
  }
  return { description: parseDescription(json, absolute), baseDirectory: path.dirname(absolute), file: absolute };
}

/** Whether the layer installs Python packages (and so needs pip at build time). */
export function installsPythonPackages(description: EnvironmentDescription): boolean {
  const python = description.python;
  return python.requirements !== undefined || python.wheels.length > 0 || python.packages.length > 0;
}

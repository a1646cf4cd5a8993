/** The zod schemas of a session's shell commands and contexts under /v1: they validate requests and make the OpenAPI document. */
import { z } from 'zod';
import type * as Protocol from '../../protocol/index.js';
import { CONTEXT_ID, LANGUAGES } from '../../session/languages.js';
import { MAX_ENVIRONMENT_ENTRIES, MAX_PATH_BYTES } from '../../session/sandbox-inputs.js';
import { SessionIdParams } from './schemas.js';

/** A working directory: the sandbox is the boundary, so any path fits, within Linux's PATH_MAX. */
const WorkingDirectory = z
  .string()
  .min(1)
  .max(MAX_PATH_BYTES)
  .optional()
  .meta({ description: 'Working directory, absolute or relative to /mnt/data. @default /mnt/data' });

const Environment = z
  .record(z.string(), z.string())
  .refine((env) => Object.keys(env).length <= MAX_ENVIRONMENT_ENTRIES, {
    message: `at most ${MAX_ENVIRONMENT_ENTRIES} variables; put more in a file under /mnt/data`,
  })
  .optional()
  .meta({ description: `Environment variables on top of the session's (at most ${MAX_ENVIRONMENT_ENTRIES}).` });

export const Language = z.enum(LANGUAGES).meta({ description: 'The language of a context.' });

export const ContextId = z
  .string()
  .regex(CONTEXT_ID, 'a context id is 1 to 64 letters, digits, ".", "-" or "_"')
  .meta({ description: 'A context id; a language’s name is its default context.' });

export const CommandBody = z
  .object({
    command: z.string().min(1).meta({ description: 'Run with `bash -c` in the sandbox.' }),
    cwd: WorkingDirectory,
    env: Environment,
    timeoutMs: z
      .number()
      .positive()
      .optional()
      .meta({
        description:
          "Wall-clock limit, at most the key's execution limit; past it the command's process group is killed. " +
          '@default the execution default for a command waited for; none for a background one',
      }),
    stdin: z.string().optional().meta({
      description:
        'Text for its stdin: a command waited for gets it then end of file; a background one keeps stdin open.',
    }),
    background: z.boolean().default(false).meta({
      description:
        'Answer 202 with `{ pid, id }` once it has started; it runs until it ends, is killed or the session closes.',
    }),
  })
  .strict();

export const CommandResultSchema = z
  .object({
    exitCode: z.number().int(),
    stdout: z.string(),
    stderr: z.string(),
    durationMs: z.number(),
    timedOut: z.boolean(),
    outputTruncated: z.boolean(),
    signal: z.string().optional().meta({ description: 'The signal that ended it, if one did.' }),
  })
  .meta({ title: 'CommandResult' });

export const StartedCommandSchema = z
  .object({
    pid: z.number().int().meta({ description: 'Its process id inside the sandbox.' }),
    id: z.string(),
  })
  .meta({ title: 'StartedCommand' });

export const CommandInfoSchema = z
  .object({
    id: z.string(),
    pid: z.number().int(),
    command: z.string(),
    cwd: z.string(),
    startedAt: z.string().meta({ description: 'ISO 8601, by the sandbox’s clock.' }),
  })
  .meta({ title: 'RunningCommand' });

export const CommandListSchema = z.object({ commands: z.array(CommandInfoSchema) });

export const CommandPidParams = SessionIdParams.extend({
  pid: z
    .string()
    .regex(/^[1-9]\d{0,9}$/, 'a pid is a positive integer')
    .transform(Number)
    .meta({ description: 'The process id of a command (from its start or the list).' }),
});

export const StdinBody = z
  .object({
    text: z.string().default('').meta({ description: 'Written to the command’s stdin as is.' }),
    close: z
      .boolean()
      .default(false)
      .meta({ description: 'Close its stdin afterwards (the program sees end of file).' }),
  })
  .strict();

export const CreateContextBody = z
  .object({
    language: Language,
    cwd: WorkingDirectory,
    env: Environment,
  })
  .strict();

export const ContextSchema = z
  .object({
    id: z.string(),
    language: Language,
    cwd: z.string(),
    executionCount: z.number().int(),
  })
  .meta({ title: 'Context' });

export const ContextListSchema = z.object({ contexts: z.array(ContextSchema) });

export const ContextIdParams = SessionIdParams.extend({ contextId: ContextId });

// The schemas and src/protocol/ describe the same shapes, or this does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [Same<z.output<typeof CommandResultSchema>, Protocol.CommandOutcome>] = [true];
void sameShapes;

/** The zod schemas of the Azure dynamic-sessions API: they validate requests and make the OpenAPI document. */
import { z } from 'zod';

const IDENTIFIER = /^[A-Za-z0-9_.|\-&^%$#(){}[\];<>]{4,128}$/;

export const AzureQuery = z.object({
  identifier: z
    .string({ error: 'the `identifier` query parameter is required' })
    .regex(IDENTIFIER, 'an identifier is 4 to 128 letters, digits or |-&^%$#(){}[];<>_.')
    .meta({ description: 'The session: created on first use, 4 to 128 characters.' }),
  'api-version': z
    .string({ error: 'the `api-version` query parameter is required' })
    .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/, 'an api-version looks like 2024-02-02-preview'),
});

export const AzurePathQuery = AzureQuery.extend({
  path: z.string().optional().meta({ description: 'A directory under /mnt/data (newer files API).' }),
});

const caseInsensitive = (value: string) =>
  z
    .string()
    .refine((given) => given.toLowerCase() === value.toLowerCase(), `only "${value}" is supported`)
    .optional();

/** `inline`: `code` is Python; `shellCommand`: a shell command, in `shellCommand` or `code`. */
const CodeInputType = z
  .string()
  .refine((given) => ['inline', 'shellcommand'].includes(given.toLowerCase()), 'only "inline" or "shellCommand"')
  .optional()
  .meta({ description: '`inline` (Python, the default) or `shellCommand` (run with `bash -c`).' });

const ShellCommand = z
  .string()
  .min(1)
  .optional()
  .meta({ description: 'The command line, for `codeInputType: "shellCommand"` (or without it).' });

const ExitCode = z.number().int().optional().meta({ description: "A shell command's exit status (absent for code)." });

/** Whether a request runs a shell command, and which: `shellCommand`, or `code` under that input type. */
export function requestedShellCommand(request: {
  codeInputType?: string | undefined;
  code?: string | undefined;
  shellCommand?: string | undefined;
}): string | undefined {
  if (request.shellCommand !== undefined) return request.shellCommand;
  return request.codeInputType?.toLowerCase() === 'shellcommand' ? request.code : undefined;
}

const CODE_OR_COMMAND = { error: '`code` (or `shellCommand` with codeInputType "shellCommand") is required' };

export const AzureCodeExecuteBody = z.object({
  properties: z
    .object({
      codeInputType: CodeInputType,
      executionType: caseInsensitive('synchronous'),
      code: z.string().optional(),
      shellCommand: ShellCommand,
      timeoutInSeconds: z.number().positive().optional(),
    })
    .refine((properties) => properties.code !== undefined || properties.shellCommand !== undefined, CODE_OR_COMMAND),
});

export const AzureCodeExecuteResponse = z.object({
  $id: z.string(),
  properties: z.object({
    $id: z.string(),
    status: z.enum(['Success', 'Failure', 'Timeout']),
    stdout: z.string(),
    stderr: z.string(),
    result: z.unknown().meta({ description: 'The last expression as JSON, or an image object.' }),
    exitCode: ExitCode,
    executionTimeInMilliseconds: z.number().int(),
  }),
});

export const AzureFileListResponse = z.object({
  $id: z.string(),
  value: z.array(
    z.object({
      $id: z.string(),
      properties: z.object({
        $id: z.string(),
        filename: z.string(),
        size: z.number().int(),
        lastModifiedTime: z.string(),
      }),
    }),
  ),
});

export const AzureExecutionBody = z
  .looseObject({
    codeInputType: CodeInputType,
    executionType: caseInsensitive('synchronous'),
    code: z.string().optional(),
    shellCommand: ShellCommand,
    timeoutInSeconds: z.number().positive().optional(),
  })
  .refine((request) => request.code !== undefined || request.shellCommand !== undefined, CODE_OR_COMMAND);

export const AzureExecutionResponse = z.object({
  id: z.string(),
  identifier: z.string(),
  executionType: z.string(),
  status: z.enum(['Succeeded', 'Failed']),
  result: z.object({
    stdout: z.string(),
    stderr: z.string(),
    executionResult: z.unknown(),
    exitCode: ExitCode,
    executionTimeInMilliseconds: z.number().int(),
  }),
});

export const AzureFileSchema = z.object({
  name: z.string(),
  type: z.enum(['file', 'directory']),
  sizeInBytes: z.number().int(),
  lastModifiedAt: z.string(),
  contentType: z.string().optional(),
});

export const AzureFilesResponse = z.object({ value: z.array(AzureFileSchema) });

export const AzureNameParams = z.object({
  name: z.string().min(1).meta({ description: 'A file name or path under /mnt/data (URL-encoded or not).' }),
});

export const AzureUploadForm = z.object({
  file: z.string().meta({ format: 'binary', description: 'The file; its file name is its path under /mnt/data.' }),
});

/** The zod schemas of the HTTP API: they validate requests and make the OpenAPI document. */
import { z } from 'zod';
import type * as Protocol from '../protocol/index.js';

// --- shared -------------------------------------------------------------------

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Machine-readable, e.g. `invalid-path`, `session-not-found`.' }),
      message: z.string().meta({ description: 'What went wrong and what to do.' }),
    }),
  })
  .meta({ title: 'Error' });

export const SessionIdParams = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a session id is 1 to 64 letters, digits, "-" or "_"'),
});

export const FilePathParams = SessionIdParams.extend({
  path: z.string().min(1).meta({ description: 'A path under /mnt/data (URL-encoded; slashes allowed).' }),
});

// --- /v1 ----------------------------------------------------------------------

export const SessionSchema = z
  .object({
    id: z.string(),
    source: z.enum(['v1', 'azure', 'mcp', 'conversation']).meta({ description: 'Which API created the session.' }),
    name: z.string().optional().meta({ description: 'The Azure identifier or MCP session name, if any.' }),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
    lastActivityAt: z.string().meta({ description: 'ISO 8601; idle sessions are closed after the idle timeout.' }),
    executions: z.number().int(),
    busy: z.boolean(),
  })
  .meta({ title: 'Session' });

export const SessionListSchema = z.object({ sessions: z.array(SessionSchema) });

export const CreateSessionBody = z.object({}).strict().meta({ description: 'No fields yet; send `{}` or nothing.' });

export const ImageRefSchema = z.object({
  mimeType: z.string(),
  url: z.string().meta({ description: 'Where to GET the image (relative to the server).' }),
});

export const ResultSchema = z.object({
  type: z.enum(['execute_result', 'display_data']),
  data: z
    .record(z.string(), z.unknown())
    .meta({ description: 'MIME bundle; images are left out unless `images` is `inline`.' }),
  metadata: z.record(z.string(), z.unknown()),
  images: z.array(ImageRefSchema).optional(),
});

export const ExecutionSchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    status: z.enum(['ok', 'error', 'timeout']),
    stdout: z.string(),
    stderr: z.string(),
    results: z.array(ResultSchema),
    error: z.object({ name: z.string(), value: z.string(), traceback: z.array(z.string()) }).optional(),
    executionCount: z.number().int(),
    durationMs: z.number(),
    stateLost: z.boolean().optional(),
    stateLostReason: z.string().optional(),
    outputTruncated: z.boolean().optional(),
  })
  .meta({ title: 'Execution' });

export const ExecuteBody = z
  .object({
    code: z.string().meta({ description: 'Python source.' }),
    timeoutMs: z
      .number()
      .positive()
      .optional()
      .meta({ description: "Wall-clock limit; at most the key's execution limit." }),
    images: z
      .enum(['url', 'inline'])
      .default('url')
      .meta({ description: '`url`: images are stored and linked; `inline`: base64 in `data`.' }),
  })
  .strict();

export const ExecuteQuery = z.object({
  stream: z.enum(['ndjson', 'sse']).optional().meta({
    description: 'Stream events as they happen (also chosen by `Accept: application/x-ndjson` or `text/event-stream`).',
  }),
});

export const FileSchema = z
  .object({
    path: z.string().meta({ description: 'Relative to /mnt/data.' }),
    type: z.enum(['file', 'directory', 'symlink', 'other']),
    size: z.number().int(),
    modifiedAt: z.string(),
    url: z.string().optional().meta({ description: 'Where to GET the bytes (files only).' }),
  })
  .meta({ title: 'File' });

export const FileListSchema = z.object({ files: z.array(FileSchema) });

export const ListFilesQuery = z.object({
  path: z.string().optional().meta({ description: 'A directory under /mnt/data. @default /mnt/data' }),
  recursive: z
    .enum(['true', 'false'])
    .optional()
    .transform((value) => value === 'true'),
});

export const UploadForm = z.object({
  file: z
    .array(z.string().meta({ format: 'binary' }))
    .meta({ description: 'One or more files; each is saved under its file name.' }),
  directory: z.string().optional().meta({ description: 'A directory under /mnt/data to save them in.' }),
});

export const UploadedSchema = z.object({ files: z.array(FileSchema) });

export const HealthSchema = z.object({
  status: z.enum(['ok', 'degraded', 'shutting-down']),
  sessions: z.object({ live: z.number(), warm: z.number(), starting: z.number(), running: z.number() }),
  lastError: z.string().optional(),
});

// --- Azure dynamic sessions ----------------------------------------------------

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

export const AzureCodeExecuteBody = z.object({
  properties: z.object({
    codeInputType: caseInsensitive('inline'),
    executionType: caseInsensitive('synchronous'),
    code: z.string(),
    timeoutInSeconds: z.number().positive().optional(),
  }),
});

export const AzureCodeExecuteResponse = z.object({
  $id: z.string(),
  properties: z.object({
    $id: z.string(),
    status: z.enum(['Success', 'Failure', 'Timeout']),
    stdout: z.string(),
    stderr: z.string(),
    result: z.unknown().meta({ description: 'The last expression as JSON, or an image object.' }),
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

export const AzureExecutionBody = z.looseObject({
  codeInputType: caseInsensitive('inline'),
  executionType: caseInsensitive('synchronous'),
  code: z.string({ error: '`code` is required (this pool runs Python; `shellCommand` is not supported)' }),
  timeoutInSeconds: z.number().positive().optional(),
});

export const AzureExecutionResponse = z.object({
  id: z.string(),
  identifier: z.string(),
  executionType: z.string(),
  status: z.enum(['Succeeded', 'Failed']),
  result: z.object({
    stdout: z.string(),
    stderr: z.string(),
    executionResult: z.unknown(),
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

// The schemas and src/protocol/ describe the same shapes, or this does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<z.output<typeof ErrorSchema>, Protocol.ErrorBody>,
  Same<z.output<typeof FileSchema>, Protocol.FileInfo>,
] = [true, true];
void sameShapes;

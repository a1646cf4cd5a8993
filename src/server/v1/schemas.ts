/** The zod schemas of the native /v1 sessions API: they validate requests and make the OpenAPI document. */

import { z } from 'zod';
import { ENVIRONMENT_NAME_PATTERN } from '../../environments/types.js';
import { MAX_ALLOW_RULES, MAX_RULE_LENGTH, MAX_TRUSTED_CERTIFICATE_BYTES } from '../../network/network-option.js';
import { MAX_NETWORK_SECRETS, MAX_SECRET_VALUE_BYTES } from '../../network/network-secret.js';
import type * as Protocol from '../../protocol/index.js';
import { CONTEXT_ID, LANGUAGES } from '../../session/languages.js';
import { MAX_LINK_TTL_MS } from '../../store/object-store.js';

/** The volumes a new session (or conversation) mounts. */
export const VolumeMountRequests = z
  .array(
    z
      .object({
        volume: z.string().min(1).max(64).meta({ description: "One of the key's volumes, by name or id." }),
        path: z.string().min(1).max(256).meta({ description: 'Where it appears in the sandbox, e.g. /mnt/data-sets.' }),
        readOnly: z.boolean().optional(),
        subPath: z.string().max(4096).optional().meta({ description: 'A directory of the volume, mounted alone.' }),
      })
      .strict(),
  )
  .max(16);

/** The volumes a session's sandboxes mount, as it answers them. */
export const MountedVolumesSchema = z.array(
  z.object({
    volumeId: z.string(),
    volume: z.string(),
    path: z.string(),
    readOnly: z.boolean(),
    subPath: z.string().optional(),
  }),
);

export const SessionIdParams = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a session id is 1 to 64 letters, digits, "-" or "_"'),
});

export const FilePathParams = SessionIdParams.extend({
  path: z.string().min(1).meta({ description: 'A path under /mnt/data (URL-encoded; slashes allowed).' }),
});

// --- /v1 ----------------------------------------------------------------------

const SkippedNameSchema = z.object({ name: z.string(), reason: z.string() });

export const RestoreReportSchema = z
  .object({
    snapshotId: z.string().optional(),
    kind: z.enum(['checkpoint', 'kernel-state']).meta({
      description: "How it came back: the whole sandbox from its checkpoint (gVisor), or each kernel's saved state.",
    }),
    contexts: z.array(
      z.object({
        id: z.string(),
        language: z.string(),
        restored: z.array(z.string()).meta({ description: 'The names that came back.' }),
        skipped: z.array(SkippedNameSchema).meta({ description: 'The names that did not, and why (`socket`, …).' }),
        whole: z
          .boolean()
          .optional()
          .meta({ description: 'Came back whole with the sandbox (a checkpoint): every name, threads, open files.' }),
      }),
    ),
    notKept: z
      .array(SkippedNameSchema)
      .meta({ description: 'What ran when it was paused and cannot be kept (commands).' }),
  })
  .meta({ title: 'RestoreReport' });

const SourceSchema = z
  .enum(['v1', 'azure', 'mcp', 'conversation', 'e2b', 'jupyter', 'jupyter-terminal'])
  .meta({ description: 'Which API created the session.' });

export const SessionSchema = z
  .object({
    id: z.string(),
    state: z.literal('running'),
    source: z
      .enum(['v1', 'azure', 'mcp', 'conversation', 'e2b', 'jupyter', 'jupyter-terminal'])
      .meta({ description: 'Which API created the session.' }),
    name: z.string().optional().meta({ description: 'The Azure identifier or MCP session name, if any.' }),
    environment: z.string().meta({ description: 'The environment it runs in (`default`: the runtime itself).' }),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
    lastActivityAt: z.string().meta({ description: 'ISO 8601; idle sessions are closed after the idle timeout.' }),
    executions: z.number().int(),
    busy: z.boolean().meta({ description: 'Code, or a command someone waits for, runs now.' }),
    active: z.boolean().meta({
      description:
        'Anything runs now, background commands included: an active session is not closed for idling; ' +
        'the idle clock starts again when its last command ends.',
    }),
    restored: RestoreReportSchema.optional().meta({
      description: 'When it was resumed from a pause: what came back of each context, and what did not.',
    }),
    publishOutputs: z
      .boolean()
      .optional()
      .meta({ description: 'Its executions’ files are published with signed links.' }),
    volumes: MountedVolumesSchema.optional().meta({ description: 'The volumes mounted in its sandboxes.' }),
  })
  .meta({ title: 'Session' });

export const PausedSessionSchema = z
  .object({
    id: z.string(),
    state: z.enum(['paused', 'lost']).meta({
      description: '`paused`: its next request resumes it. `lost`: its pause failed, and its state is gone.',
    }),
    source: SourceSchema,
    name: z.string().optional(),
    environment: z.string(),
    pausedAt: z.string().meta({ description: 'ISO 8601.' }),
    pauseReason: z.string().meta({ description: '`idle`, `shutdown` or `requested`.' }),
    snapshotId: z.string().optional(),
    lostReason: z.string().optional(),
  })
  .meta({ title: 'PausedSession' });

export const SessionListSchema = z.object({ sessions: z.array(z.union([SessionSchema, PausedSessionSchema])) });

export const NetworkOptionSchema = z
  .union([
    z.literal('none'),
    z
      .object({
        allow: z.array(z.string().min(1).max(MAX_RULE_LENGTH)).max(MAX_ALLOW_RULES),
        packageIndex: z.boolean().optional().meta({
          description:
            "Also the Python package index the server's pip is configured for (its hosts join `allow`, and the sandbox's pip uses it), within what the operator permits: `sandcell serve --allow-package-index` permits it.",
        }),
        trustedCertificates: z.string().max(MAX_TRUSTED_CERTIFICATE_BYTES).optional(),
        secrets: z
          .array(
            z
              .object({
                host: z.string().min(1).max(253),
                header: z.string().min(1).max(100),
                value: z.string().min(1).max(MAX_SECRET_VALUE_BYTES),
              })
              .strict(),
          )
          .max(MAX_NETWORK_SECRETS)
          .optional()
          .meta({
            description:
              'Headers the gate adds to requests for a host the allow-list covers, so a key never enters the sandbox ' +
              "(over HTTPS the gate ends TLS for that host with the session's own CA, which the sandbox trusts). " +
              "Never logged nor answered; the operator's own secret for the same host and header wins.",
          }),
      })
      .strict(),
  ])
  .meta({
    description:
      "Internet access: 'none', or the hosts the session may reach over HTTP and HTTPS through the server's gate " +
      '(`pypi.org`, `*.example.com`, `10.0.0.0/8`, each with an optional `:port`), within what the operator permits (else 403). ' +
      "Omitted: the server's default.",
  });

export const CreateSessionBody = z
  .object({
    network: NetworkOptionSchema.optional(),
    environment: z
      .string()
      .regex(ENVIRONMENT_NAME_PATTERN, 'an environment name: lower-case letters, digits and -')
      .optional()
      .meta({
        description:
          "A built environment (`sandcell env build`; GET /v1/environments lists them). Default: the server's.",
      }),
    volumes: VolumeMountRequests.optional().meta({
      description: "Volumes mounted in the session's sandboxes (POST /v1/volumes makes one).",
    }),
    publishOutputs: z.boolean().optional().meta({
      description:
        "Upload the files each execution writes to the server's store and answer each with a signed read-only link (`files` in the execution). Default: the server's (`--publish-outputs`).",
    }),
  })
  .strict()
  .meta({ description: "Send `{}` or nothing for a session with the server's defaults (environment, network)." });

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
    files: z
      .array(
        z.object({
          path: z.string().meta({ description: 'Relative to /mnt/data.' }),
          size: z.number().int(),
          url: z.string().optional().meta({
            description:
              'A signed read-only link to this one file, needing no key: on S3 or Azure the cloud’s own, on a directory a path on this server.',
          }),
          expiresAt: z.string().optional(),
          error: z.string().optional().meta({
            description: 'Why it was not published; it is tried again after the next execution.',
          }),
        }),
      )
      .optional()
      .meta({ description: 'The files the execution created or changed, when its session publishes outputs.' }),
    exitStatus: z.number().int().min(0).max(255).optional().meta({
      description:
        "The code asked to exit with this status (Python's sys.exit(n), exit(), quit(); bash's exit) and stopped there; the session goes on. Python keeps its state: 0 is a success, another status a `SystemExit` error.",
    }),
  })
  .meta({ title: 'Execution' });

export const ExecuteBody = z
  .object({
    code: z.string().meta({ description: 'Source in the context’s language (Python by default).' }),
    language: z.enum(LANGUAGES).optional().meta({
      description: 'Run in this language’s default context, started on first use. @default python',
    }),
    context: z.string().regex(CONTEXT_ID, 'a context id is 1 to 64 letters, digits, ".", "-" or "_"').optional().meta({
      description: 'Run in this context (from POST /v1/sessions/{id}/contexts); a language’s name is its default.',
    }),
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

export const ImportBody = z
  .object({
    url: z.string().min(1).max(8192).meta({
      description: 'A link from an execution’s `files` (a published output of this key, on this server’s store).',
    }),
    path: z.string().optional().meta({ description: 'Where in /mnt/data to write it. Default: the file’s name.' }),
  })
  .strict();

export const UploadedSchema = z.object({ files: z.array(FileSchema) });

export const UploadLinkBody = z
  .object({
    path: z.string().min(1).max(4096).meta({ description: 'Where in /mnt/data the upload is written.' }),
    expiresIn: z
      .number()
      .int()
      .min(1)
      .max(MAX_LINK_TTL_MS / 1000)
      .optional()
      .meta({ description: 'Seconds the link works. Default: the server’s --link-ttl (1 hour).' }),
  })
  .strict();

export const UploadLinkSchema = z
  .object({
    url: z.string().meta({ description: 'PUT the file’s bytes here, with no key (a path on this server).' }),
    method: z.literal('PUT'),
    path: z.string().meta({ description: 'Where the file will be, relative to /mnt/data.' }),
    expiresAt: z.string(),
  })
  .meta({ title: 'UploadLink' });

// The schemas and src/protocol/ describe the same shapes, or this does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [Same<z.output<typeof FileSchema>, Protocol.FileInfo>] = [true];
void sameShapes;

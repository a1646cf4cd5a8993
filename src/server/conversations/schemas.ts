/**
 * The conversation API's zod schemas: they validate requests and describe the
 * answers in /openapi.json. The types at the end make the compiler check that
 * they describe exactly the shapes of src/protocol/.
 */
import { z } from 'zod';
import type * as Protocol from '../../protocol/index.js';
import { LANGUAGES } from '../../session/languages.js';
import { MountedVolumesSchema, VolumeMountRequests } from '../v1/schemas.js';

export const ConversationIdParams = z.object({
  id: z.string().uuid('a conversation id is a UUID'),
});

export const ApprovalParams = ConversationIdParams.extend({
  approvalId: z.string().uuid('an approval id is a UUID'),
});

export const ConversationImageParams = ConversationIdParams.extend({
  name: z.string().regex(/^[a-f0-9]{20}\.[a-z]{3,4}$/, 'not an image name'),
});

const ApprovalModeSchema = z.enum(['auto', 'ask']);

const ConversationModeSchema = z.enum(['chat', 'notebook']).meta({
  description:
    'How a client shows the conversation (`chat`: questions to the model; `notebook`: cells). Kept for clients; the server does not act on it.',
});

export const CreateConversationBody = z
  .object({
    title: z
      .string()
      .max(200)
      .optional()
      .meta({ description: 'Else taken from the first question, or the files uploaded first.' }),
    mode: ConversationModeSchema.optional(),
    volumes: VolumeMountRequests.optional().meta({
      description:
        "The key's volumes its session mounts (POST /v1/volumes makes one); the model is told where. A continuation mounts them too.",
    }),
  })
  .strict();

export const UpdateConversationBody = z.object({ mode: ConversationModeSchema }).strict();

export const MessageBody = z
  .object({
    content: z.string().trim().min(1, 'the question is empty').max(100_000),
    approval: ApprovalModeSchema.optional().meta({
      description: "`ask`: each piece of code waits for POST …/approvals/{approvalId}. Default: the server's setting.",
    }),
  })
  .strict();

export const CellBody = z
  .object({
    code: z.string().meta({ description: 'Source in `language`.' }),
    language: z.enum(LANGUAGES).optional().meta({
      description: "The cell's language: its default context in the session keeps state between cells. @default python",
    }),
    timeoutMs: z.number().positive().optional().meta({ description: "Wall-clock limit; at most the key's limit." }),
  })
  .strict();

export const TurnStreamQuery = z.object({
  stream: z.enum(['sse', 'ndjson', 'none']).optional().meta({
    description: 'Else from Accept: text/event-stream (SSE), application/x-ndjson, or JSON when the turn ends.',
  }),
});

export const ApprovalBody = z
  .discriminatedUnion('decision', [
    z.object({ decision: z.literal('run') }).strict(),
    z.object({ decision: z.literal('skip'), reason: z.string().max(2_000).optional() }).strict(),
    z
      .object({
        decision: z.literal('edit'),
        code: z.string().min(1).meta({ description: 'The code to run instead.' }),
      })
      .strict(),
  ])
  .meta({ title: 'ApprovalDecision' });

const ImageLinkSchema = z.object({ mimeType: z.string(), url: z.string() });

const PresentedResultSchema = z.object({
  type: z.enum(['execute_result', 'display_data']),
  data: z.record(z.string(), z.unknown()).meta({ description: 'MIME bundle without images; text/html is untrusted.' }),
  metadata: z.record(z.string(), z.unknown()),
  images: z.array(ImageLinkSchema).optional(),
});

const TracebackErrorSchema = z.object({ name: z.string(), value: z.string(), traceback: z.array(z.string()) });

const CodeFileSchema = z.object({
  path: z.string(),
  size: z.number(),
  kind: z.enum(['file', 'figure']),
  url: z.string(),
});

const FilePreviewSchema = z.object({
  path: z.string(),
  size: z.number(),
  format: z.enum(['csv', 'tsv', 'json', 'jsonl', 'text', 'binary']),
  rows: z.number().optional(),
  columns: z.array(z.object({ name: z.string(), dtype: z.string() })).optional(),
  head: z.object({ columns: z.array(z.string()), rows: z.array(z.array(z.string())) }).optional(),
  text: z.string().meta({ description: 'The preview the model was given.' }),
  url: z.string(),
});

const ExecutionSummarySchema = z.object({
  status: z.enum(['ok', 'error', 'timeout']),
  error: TracebackErrorSchema.optional(),
  executionCount: z.number(),
  durationMs: z.number(),
  stateLost: z.boolean().optional(),
  stateLostReason: z.string().optional(),
  outputTruncated: z.boolean().optional(),
});

const CodeStepSchema = z.object({
  type: z.literal('code'),
  callId: z.string(),
  code: z.string(),
  language: z
    .enum([...LANGUAGES, 'shell'])
    .optional()
    .meta({
      description: 'The code’s language when not python (notebook cells); `shell` for a shell command the model ran.',
    }),
  ranCode: z.string().optional().meta({ description: 'The code that ran, when the user edited it.' }),
  attempt: z.number(),
  maxAttempts: z.number(),
  status: z.enum(['awaiting-approval', 'ready', 'running', 'ok', 'error', 'timeout', 'skipped']),
  approvalId: z.string().optional(),
  skipReason: z.enum(['declined', 'no-attempts-left', 'cancelled']).optional(),
  stdout: z.string(),
  stderr: z.string(),
  results: z.array(PresentedResultSchema),
  execution: ExecutionSummarySchema.optional(),
  files: z.array(CodeFileSchema),
});

const TextStepSchema = z.object({ type: z.literal('text'), text: z.string() });

const TurnAnswerSchema = z.object({
  stopReason: z.enum(['answer', 'max-steps', 'gave-up']),
  steps: z.number(),
  usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }),
});

const WireErrorSchema = z.object({ code: z.string(), message: z.string() });

const SessionResumedSchema = z
  .object({
    skipped: z.array(
      z.object({
        name: z.string(),
        reason: z.string().meta({ description: 'Why it could not be kept: its type (`socket`, `generator`), …' }),
        context: z.string().optional().meta({ description: "Its context, when not python's default one." }),
      }),
    ),
    notKept: z.array(z.object({ name: z.string(), reason: z.string() })).meta({
      description: 'What ran when the session was paused and could not be kept (commands).',
    }),
    message: z.string().meta({ description: 'The same, said for a person.' }),
  })
  .meta({
    description:
      'The session was resumed from a pause (idle, or a server that stopped) before this turn, and this did not come back. Absent when everything did.',
  });

export const TurnSchema = z
  .object({
    id: z.string(),
    kind: z.enum(['message', 'cell', 'upload']),
    createdAt: z.string(),
    status: z.enum(['running', 'done', 'error', 'cancelled']),
    input: z.string(),
    files: z.array(FilePreviewSchema).optional(),
    steps: z.array(z.discriminatedUnion('type', [TextStepSchema, CodeStepSchema])),
    answer: TurnAnswerSchema.optional(),
    error: WireErrorSchema.optional(),
    resumed: SessionResumedSchema.optional(),
  })
  .meta({ title: 'Turn' });

export const ConversationSummarySchema = z
  .object({
    id: z.string(),
    title: z.string(),
    sessionId: z.string().meta({ description: 'Its files: /v1/sessions/{sessionId}/files.' }),
    status: z.enum(['active', 'expired']).meta({
      description:
        '`expired`: its session is gone (closed, deleted, or its state could not be kept); read-only. A session paused when idle or by a restart is `active`: the next turn resumes it.',
    }),
    busy: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
    expiredAt: z.string().optional(),
    expiredReason: z.string().optional(),
    turnCount: z.number(),
    mode: ConversationModeSchema.optional(),
    droppedTurns: z
      .number()
      .optional()
      .meta({ description: 'The oldest turns dropped whole to keep the history within bounds (outputs go first).' }),
    continuedFrom: z.object({ id: z.string(), title: z.string() }).optional().meta({
      description:
        'The conversation this one continues in a new session (POST …/continue): the model was given its history; nothing of it was re-run.',
    }),
    volumes: MountedVolumesSchema.optional().meta({ description: 'The volumes its session mounts.' }),
  })
  .meta({ title: 'ConversationSummary' });

export const ConversationSchema = ConversationSummarySchema.extend({ turns: z.array(TurnSchema) }).meta({
  title: 'Conversation',
});

export const ConversationListSchema = z.object({ conversations: z.array(ConversationSummarySchema) });

export const UploadTurnSchema = z.object({ turn: TurnSchema });

export const ApprovalAnswerSchema = z.object({ approvalId: z.string(), decision: z.enum(['run', 'skip', 'edit']) });

export const CancelSchema = z.object({
  cancelled: z.boolean().meta({ description: 'False when no turn was running.' }),
});

export const ServerConfigSchema = z
  .object({
    version: z.string(),
    model: z.object({ provider: z.string(), model: z.string() }).nullable(),
    modelHelp: z.string().meta({ description: 'How to configure a model on the server.' }),
    approvalDefault: ApprovalModeSchema,
    maxUploadBytes: z.number(),
    idleTimeoutMs: z.number(),
    onIdle: z.enum(['pause', 'close']).meta({
      description: 'What an idle session becomes: `pause` (its state kept; its next turn resumes it) or `close`.',
    }),
  })
  .meta({ title: 'ServerConfig' });

// The schemas and src/protocol/ describe the same shapes, or this does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<z.output<typeof TurnSchema>, Protocol.Turn>,
  Same<z.output<typeof ConversationSchema>, Protocol.Conversation>,
  Same<z.output<typeof ServerConfigSchema>, Protocol.ServerConfig>,
] = [true, true, true];
void sameShapes;

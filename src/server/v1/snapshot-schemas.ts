/** The wire shapes of snapshots under /v1 (snapshot-routes.ts). */
import { z } from 'zod';

const SkippedNameSchema = z.object({ name: z.string(), reason: z.string() });

export const SnapshotIdParams = z.object({
  snapshotId: z.string().regex(/^[0-9a-f]{32}$/, 'a snapshot id is 32 hexadecimal digits'),
});

export const RestoreBody = z.object({ snapshotId: SnapshotIdParams.shape.snapshotId }).strict();

export const SnapshotSchema = z
  .object({
    id: z.string(),
    sessionId: z.string().meta({ description: 'The session it was taken of.' }),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
    bytes: z.number().int().meta({ description: 'Its size in the store.' }),
    environment: z.string(),
    contexts: z.array(
      z.object({
        id: z.string(),
        language: z.string(),
        cwd: z.string(),
        executionCount: z.number().int(),
        saved: z.array(z.string()).meta({ description: 'The names its state holds.' }),
        skipped: z.array(SkippedNameSchema).meta({ description: 'The names it could not keep, and why.' }),
      }),
    ),
    notKept: z.array(SkippedNameSchema).meta({ description: 'What ran that a snapshot cannot keep (commands).' }),
    kind: z.enum(['checkpoint', 'kernel-state']).meta({
      description:
        "`checkpoint`: the whole sandbox, every process with its memory and open files (the gVisor backend); `kernel-state`: each kernel's saved state.",
    }),
  })
  .meta({ title: 'Snapshot' });

export const SnapshotListSchema = z.object({ snapshots: z.array(SnapshotSchema) });

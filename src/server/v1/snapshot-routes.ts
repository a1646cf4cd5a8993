/**
 * Snapshots under /v1: pause and resume a session, take a snapshot of it while
 * it runs on, roll it back to one (restore), fork it; list and delete a key's
 * snapshots. A request to a paused session resumes it, so `resume` is only
 * needed to bring one back ahead of its use.
 */
import type { z } from 'zod';
import type { ServerContext } from '../core/context.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import { presentPausedSession, presentSession } from './present.js';
import { PausedSessionSchema, RestoreReportSchema, SessionIdParams, SessionSchema } from './schemas.js';
import { RestoreBody, SnapshotIdParams, SnapshotListSchema, SnapshotSchema } from './snapshot-schemas.js';

const TAGS = ['snapshots'];
const notFoundResponse = { description: 'No such session or snapshot (or not yours).', json: ErrorSchema };
const busyResponse = {
  description: 'Code still ran in the session when the snapshot stopped waiting for it (`timeout`).',
  json: ErrorSchema,
};

export function snapshotRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const routes = [
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/pause',
      operationId: 'pauseSession',
      summary:
        'Pause a session: its state (variables of every context, files) goes to a snapshot and its sandbox ends. Its next request resumes it.',
      tags: TAGS,
      params: SessionIdParams,
      responses: {
        200: { description: 'The paused session.', json: PausedSessionSchema },
        404: notFoundResponse,
        504: busyResponse,
      },
      handler: async (c, { owner, params }) => {
        const entry = registry.find(owner, params.id);
        if (!entry) {
          // Paused already: answered as it is.
          const paused = await registry.pauses.find(owner, params.id);
          if (paused) return c.json(presentPausedSession(paused));
        }
        const record = await registry.pauses.pause(entry ?? (await registry.open(owner, params.id)), 'requested');
        return c.json(presentPausedSession(record));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/resume',
      operationId: 'resumeSession',
      summary:
        'Resume a paused session now (any request to it does the same). `restored` says, per context, what came back and what did not.',
      tags: TAGS,
      params: SessionIdParams,
      responses: {
        200: { description: 'The live session.', json: SessionSchema },
        404: notFoundResponse,
        410: { description: 'Its pause failed: its state is gone (`session-lost`).', json: ErrorSchema },
        422: { description: 'Its snapshot does not verify (`snapshot-invalid`).', json: ErrorSchema },
      },
      handler: async (c, { owner, params }) => c.json(presentSession(await registry.open(owner, params.id))),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/snapshots',
      operationId: 'createSnapshot',
      summary:
        'Take a snapshot of a session, which runs on. Waits for running code; a command running is named in `notKept`.',
      tags: TAGS,
      params: SessionIdParams,
      responses: {
        201: { description: 'The snapshot.', json: SnapshotSchema },
        404: notFoundResponse,
        504: busyResponse,
      },
      handler: async (c, { owner, params }) => {
        const info = await registry.snapshots.take(await registry.open(owner, params.id));
        return c.json(info, 201, { location: `/v1/snapshots/${info.id}` });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/restore',
      operationId: 'restoreSession',
      summary:
        "Roll a session back to one of the key's snapshots: its commands and contexts end, files made since go, each context comes back as the snapshot had it.",
      tags: TAGS,
      params: SessionIdParams,
      body: { json: RestoreBody, required: true },
      responses: {
        200: { description: 'What came back, per context.', json: RestoreReportSchema },
        404: notFoundResponse,
        422: { description: 'The snapshot does not verify; the session is left as it was.', json: ErrorSchema },
        504: busyResponse,
      },
      handler: async (c, { owner, params, body }) => {
        const { snapshotId } = body as z.output<typeof RestoreBody>;
        return c.json(await registry.snapshots.restore(await registry.open(owner, params.id), snapshotId));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/fork',
      operationId: 'forkSession',
      summary: 'A new session holding what this one holds now (files, contexts, variables), independent from then on.',
      tags: TAGS,
      params: SessionIdParams,
      responses: {
        201: { description: 'The new session.', json: SessionSchema },
        404: notFoundResponse,
        429: { description: "The key's session limit is reached.", json: ErrorSchema },
        504: busyResponse,
      },
      handler: async (c, { owner, params }) => {
        const forked = await registry.fork(await registry.open(owner, params.id));
        return c.json(presentSession(forked), 201, { location: `/v1/sessions/${forked.id}` });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/snapshots',
      operationId: 'listSnapshots',
      summary: "The key's snapshots, newest first (those holding paused sessions included).",
      tags: TAGS,
      responses: { 200: { description: 'Snapshots.', json: SnapshotListSchema } },
      handler: async (c, { owner }) => c.json({ snapshots: await registry.snapshots.list(owner) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/snapshots/{snapshotId}',
      operationId: 'deleteSnapshot',
      summary: 'Delete a snapshot (not one a paused session needs: delete that session instead).',
      tags: TAGS,
      params: SnapshotIdParams,
      responses: {
        204: { description: 'Deleted.' },
        400: { description: 'A paused session needs it.', json: ErrorSchema },
        404: notFoundResponse,
      },
      handler: async (c, { owner, params }) => {
        await registry.snapshots.delete(owner, params.snapshotId);
        return c.body(null, 204);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}

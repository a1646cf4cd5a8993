/**
 * The key's volumes under /v1: make, list, describe and delete them (a volume a live session
 * mounts is not deleted: 409, naming the sessions), and read, write, list and remove their files
 * from outside any sandbox. A session mounts them with `volumes` in its creation
 * (`POST /v1/sessions`). Every path is inside the volume, resolved on the host without following
 * a symlink (src/volumes/volume-content.ts).
 */
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { VolumeEntry } from '../../volumes/volume-content.js';
import type { VolumeRecord } from '../../volumes/volume-store.js';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { defineRoute, type RouteSpec } from '../http/route.js';

const TAGS = ['volumes'];
const VolumeParams = z.object({
  volume: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .meta({ description: "The volume's name or id." }),
});
const VolumePathParams = VolumeParams.extend({
  path: z.string().min(1).meta({ description: 'A path inside the volume (URL-encoded; slashes allowed).' }),
});
const NewVolumeBody = z.object({ name: z.string().min(1).max(64) }).strict();
const DirectoryBody = z.object({ path: z.string().min(1).max(4096) }).strict();
const ListQuery = z.object({
  depth: z.coerce.number().int().min(1).max(16).optional().meta({ description: 'Levels to list (default 1).' }),
});

const VolumeSchema = z.object({ id: z.string(), name: z.string(), createdAt: z.string() }).meta({ title: 'Volume' });
const VolumeListSchema = z
  .object({
    volumes: z.array(VolumeSchema),
    usedBytes: z.number(),
    quotaBytes: z.number(),
    enforced: z.boolean().meta({
      description: "Whether the quota holds for the sandboxes' own writes (as root), or is measured.",
    }),
  })
  .meta({ title: 'VolumeList' });
const EntrySchema = z
  .object({
    name: z.string(),
    path: z.string(),
    type: z.enum(['file', 'directory', 'symlink', 'unknown']),
    size: z.number(),
    mode: z.number(),
    uid: z.number(),
    gid: z.number(),
    atime: z.string(),
    mtime: z.string(),
    ctime: z.string(),
    target: z.string().optional(),
  })
  .meta({ title: 'VolumeEntry' });
const EntriesSchema = z.object({ entries: z.array(EntrySchema) }).meta({ title: 'VolumeEntries' });
const notFound = { description: 'No such volume (or not yours), or no such path in it.', json: ErrorSchema };

const present = (record: VolumeRecord) => ({ id: record.id, name: record.name, createdAt: record.createdAt });
const entries = (list: VolumeEntry[]) => ({ entries: list });

export function volumeRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const contentOf = async (owner: Owner, volume: string) => {
    const store = await registry.volumes.of(owner, 'files');
    return store.content(owner.id, await store.get(owner.id, volume));
  };
  const routes = [
    defineRoute({
      method: 'post',
      path: '/v1/volumes',
      operationId: 'createVolume',
      summary:
        'Make a volume: files that outlive every sandbox, mounted by the key’s sessions (`volumes` on creation).',
      tags: TAGS,
      body: { json: NewVolumeBody },
      responses: {
        201: { description: 'The new volume.', json: VolumeSchema },
        400: { description: 'Not a volume name.', json: ErrorSchema },
        409: { description: 'The key has a volume of that name.', json: ErrorSchema },
      },
      handler: async (c, { owner, body }) => {
        const { name } = body as z.output<typeof NewVolumeBody>;
        const record = await (await registry.volumes.of(owner, 'create')).create(owner.id, name);
        return c.json(present(record), 201, { location: `/v1/volumes/${record.name}` });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/volumes',
      operationId: 'listVolumes',
      summary: 'The key’s volumes, and what they hold together against its quota.',
      tags: TAGS,
      responses: { 200: { description: 'Volumes.', json: VolumeListSchema } },
      handler: async (c, { owner }) => {
        const store = await registry.volumes.of(owner, 'files');
        const { usedBytes, quotaBytes, bounded } = await store.usage(owner.id);
        return c.json({
          volumes: (await store.list(owner.id)).map(present),
          usedBytes,
          quotaBytes,
          enforced: bounded,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/volumes/{volume}',
      operationId: 'getVolume',
      summary: 'One volume, and the live sessions that mount it.',
      tags: TAGS,
      params: VolumeParams,
      responses: {
        200: {
          description: 'The volume.',
          json: VolumeSchema.extend({ mountedBy: z.array(z.string()) }).meta({ title: 'VolumeDetail' }),
        },
        404: notFound,
      },
      handler: async (c, { owner, params }) => {
        const store = await registry.volumes.of(owner, 'files');
        const record = await store.get(owner.id, params.volume);
        const held = new Set(store.holdersOf(record.id));
        const mountedBy = registry
          .list(owner)
          .filter((entry) => held.has(entry.session.id))
          .map((entry) => entry.id);
        return c.json({ ...present(record), mountedBy });
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/volumes/{volume}',
      operationId: 'deleteVolume',
      summary: 'Delete a volume and its files (refused while a live session mounts it).',
      tags: TAGS,
      params: VolumeParams,
      responses: {
        204: { description: 'Deleted.' },
        404: notFound,
        409: { description: 'A live session mounts it; the error names it.', json: ErrorSchema },
      },
      handler: async (c, { owner, params }) => {
        await registry.volumes.delete(owner, params.volume);
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/volumes/{volume}/files',
      operationId: 'listVolumeTop',
      summary: 'The entries at the top of a volume.',
      tags: TAGS,
      params: VolumeParams,
      query: ListQuery,
      responses: { 200: { description: 'Entries.', json: EntriesSchema }, 404: notFound },
      handler: async (c, { owner, params, query }) => {
        const { depth } = query as z.output<typeof ListQuery>;
        return c.json(entries(await (await contentOf(owner, params.volume)).list('', depth ?? 1)));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/volumes/{volume}/files/{path}',
      wildcard: 'path',
      operationId: 'readVolumeFile',
      summary: "A file's bytes, or a directory's entries (JSON). A symlink is never followed.",
      tags: TAGS,
      params: VolumePathParams,
      query: ListQuery,
      responses: {
        200: {
          description: 'The bytes, or the entries.',
          contentTypes: ['application/octet-stream', 'application/json'],
        },
        404: notFound,
      },
      handler: async (c, { owner, params, query }) => {
        const content = await contentOf(owner, params.volume);
        const { depth } = query as z.output<typeof ListQuery>;
        if ((await content.stat(params.path)).type === 'directory') {
          return c.json(entries(await content.list(params.path, depth ?? 1)));
        }
        const { stream, size } = await content.read(params.path);
        return c.body(Readable.toWeb(stream) as ReadableStream<Uint8Array>, 200, {
          'content-type': 'application/octet-stream',
          'content-length': String(size),
        });
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/volumes/{volume}/files/{path}',
      wildcard: 'path',
      operationId: 'writeVolumeFile',
      summary:
        "Write a file from the raw request body (its directories made), replacing it whole: a reader sees the old bytes or the new. Held to the key's quota.",
      tags: TAGS,
      params: VolumePathParams,
      body: { raw: true, streamed: true, required: true },
      bodyKind: 'upload',
      responses: {
        201: { description: 'The file written.', json: EntrySchema },
        404: notFound,
        413: { description: 'Over the upload limit.', json: ErrorSchema },
        507: { description: "The key's volumes are full; nothing was written.", json: ErrorSchema },
      },
      handler: async (c, { owner, params }) => {
        const content = await contentOf(owner, params.volume);
        const body = (c.req.raw.body ?? ReadableStream.from([])) as unknown as AsyncIterable<Uint8Array>;
        const written = await content.write(params.path, body, { maxBytes: server.options.limits.maxUploadBytes });
        return c.json(written, 201);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/volumes/{volume}/directories',
      operationId: 'makeVolumeDirectory',
      summary: 'Make a directory (and those above it); one there already is answered as it is.',
      tags: TAGS,
      params: VolumeParams,
      body: { json: DirectoryBody },
      responses: { 201: { description: 'The directory.', json: EntrySchema }, 404: notFound },
      handler: async (c, { owner, params, body }) => {
        const { path } = body as z.output<typeof DirectoryBody>;
        const content = await contentOf(owner, params.volume);
        return c.json(await content.makeDirectory(path, { parents: true }), 201);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/volumes/{volume}/files/{path}',
      wildcard: 'path',
      operationId: 'removeVolumeFile',
      summary: 'Remove a file, a symlink (not what it points to) or a directory with all in it.',
      tags: TAGS,
      params: VolumePathParams,
      responses: { 204: { description: 'Removed.' }, 404: notFound },
      handler: async (c, { owner, params }) => {
        const content = await contentOf(owner, params.volume);
        await content.remove(params.path);
        return c.body(null, 204);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}

/**
 * E2B's volumes under /e2b, so `Volume.create/connect/list/destroy` and `Sandbox.create({ volumeMounts })`
 * of the unmodified SDKs work with `E2B_VOLUME_API_URL` set to the same URL as `E2B_API_URL`:
 *
 * - the control plane (`/volumes`, the API key in `X-API-KEY`): create (201 `{volumeID, name, token}`),
 *   list, get (the token again) and delete (204; 409 while a live sandbox mounts it);
 * - the content API (`/volumecontent/{volumeID}/dir|path|file`), which the SDK calls with the volume's
 *   own token as `Authorization: Bearer`; the key (`X-API-KEY`) opens it too. Every path is inside the
 *   volume, resolved on the host without following a symlink (volumes/volume-content.ts).
 *
 * A volume belongs to the key that made it: another key's is not found, by id or by token.
 */
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { z } from 'zod';
import type { OwnershipChange } from '../../volumes/volume-content.js';
import type { VolumeRecord, VolumeStore } from '../../volumes/volume-store.js';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { E2bError } from './errors.js';

export const VOLUME_CONTENT_PATH = /^\/volumecontent\/([^/]{1,64})\/(dir|path|file)$/;
const VOLUME_ID = '([A-Za-z0-9._-]{1,64})';

export const NewVolumeBody = z.looseObject({ name: z.string().min(1).max(64) });
const MetadataBody = z.looseObject({
  uid: z.number().int().nonnegative().nullish(),
  gid: z.number().int().nonnegative().nullish(),
  mode: z.number().int().nonnegative().nullish(),
});

const presentVolume = (record: VolumeRecord) => ({ volumeID: record.id, name: record.name });
const presentVolumeAndToken = (record: VolumeRecord) => ({ ...presentVolume(record), token: record.token });

type ReadJson = <Schema extends z.ZodType>(context: Context, schema: Schema) => Promise<z.output<Schema>>;
type Handler = (context: Context, owner: Owner, id: string | undefined) => Promise<Response>;

/** The control plane's volume routes, for control-plane.ts's table. */
export function volumeRoutes(
  server: ServerContext,
  readJson: ReadJson,
): { method: string; pattern: RegExp; handler: Handler }[] {
  const { volumes } = server.registry;
  const create: Handler = async (context, owner) => {
    const body = await readJson(context, NewVolumeBody);
    return context.json(
      presentVolumeAndToken(await (await volumes.of(owner, 'create')).create(owner.id, body.name)),
      201,
    );
  };
  const list: Handler = async (context, owner) =>
    context.json((await (await volumes.of(owner, 'files')).list(owner.id)).map(presentVolume), 200);
  const get: Handler = async (context, owner, id) =>
    context.json(presentVolumeAndToken(await (await volumes.of(owner, 'files')).get(owner.id, id ?? '')), 200);
  const remove: Handler = async (context, owner, id) => {
    await volumes.delete(owner, id ?? '');
    return context.body(null, 204);
  };
  return [
    { method: 'POST', pattern: /^\/volumes$/, handler: create },
    { method: 'GET', pattern: /^\/volumes$/, handler: list },
    { method: 'GET', pattern: new RegExp(`^/volumes/${VOLUME_ID}$`), handler: get },
    { method: 'DELETE', pattern: new RegExp(`^/volumes/${VOLUME_ID}$`), handler: remove },
  ];
}

/**
 * The volume a content request is for, if its credential opens it: the volume's token (Bearer),
 * or a key of this server whose volume it is. Anything else is a 401, or a 404 for a volume the
 * key does not have (no difference between another key's and none).
 */
async function volumeOfRequest(
  context: Context,
  server: ServerContext,
  volumeId: string,
  keyOwner: () => Owner | undefined,
): Promise<{ owner: string; record: VolumeRecord; store: VolumeStore }> {
  const bearer = /^Bearer\s+(\S{1,512})$/i.exec(context.req.header('authorization') ?? '')?.[1];
  if (bearer?.startsWith('svt_')) {
    const store = await server.registry.volumes.holding(volumeId);
    const opened = await store.byToken(volumeId, bearer);
    if (!opened) throw new E2bError(401, 'Invalid volume token: use the token Volume.create or Volume.connect gave.');
    return { ...opened, store };
  }
  // The key is checked before anything of the volumes is: a request without a credential learns nothing.
  const owner = keyOwner();
  if (!owner) throw new E2bError(401, "A volume's content needs its token (Authorization: Bearer) or the API key.");
  const store = await server.registry.volumes.of(owner, 'files');
  return { owner: owner.id, record: await store.get(owner.id, volumeId), store };
}

const optionalNumber = (value: string | undefined, name: string): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new E2bError(400, `${name} must be a non-negative integer.`);
  return number;
};

/** The fields of `values` that are set (not undefined or null), for an ownership change. */
function setFields(values: { uid?: number | null; gid?: number | null; mode?: number | null }): OwnershipChange {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value != null)) as OwnershipChange;
}

/** Answers one content request (`match` is VOLUME_CONTENT_PATH's). */
export async function handleVolumeContent(
  context: Context,
  server: ServerContext,
  match: RegExpExecArray,
  keyOwner: () => Owner | undefined,
  maxUploadBytes = Number.POSITIVE_INFINITY,
): Promise<Response> {
  const [, volumeId = '', kind] = match;
  const { owner, record, store } = await volumeOfRequest(context, server, volumeId, keyOwner);
  const content = await store.content(owner, record);
  const query = context.req.query();
  const path = query.path ?? '';
  const method = context.req.method;
  const ownership = setFields({
    uid: optionalNumber(query.uid, 'uid'),
    gid: optionalNumber(query.gid, 'gid'),
    mode: optionalNumber(query.mode, 'mode'),
  });
  if (kind === 'dir' && method === 'GET') {
    const depth = optionalNumber(query.depth, 'depth') ?? 1;
    return context.json(await content.list(path, depth), 200);
  }
  if (kind === 'dir' && method === 'POST') {
    return context.json(await content.makeDirectory(path, { ...ownership, parents: query.force === 'true' }), 201);
  }
  if (kind === 'path' && method === 'GET') return context.json(await content.stat(path), 200);
  if (kind === 'path' && method === 'PATCH') {
    const text = await context.req.text();
    let parsed: z.output<typeof MetadataBody>;
    try {
      parsed = MetadataBody.parse(text.trim() === '' ? {} : JSON.parse(text));
    } catch {
      throw new E2bError(400, 'The body is { uid?, gid?, mode? } as JSON.');
    }
    return context.json(await content.change(path, setFields(parsed)), 200);
  }
  if (kind === 'path' && method === 'DELETE') {
    await content.remove(path);
    return context.body(null, 204);
  }
  if (kind === 'file' && method === 'GET') {
    const { stream, size } = await content.read(path);
    return new Response(Readable.toWeb(stream) as ReadableStream<Uint8Array>, {
      status: 200,
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
    });
  }
  if (kind === 'file' && method === 'PUT') {
    const body = context.req.raw.body;
    const chunks: AsyncIterable<Uint8Array> = body
      ? (body as unknown as AsyncIterable<Uint8Array>)
      : (async function* () {})();
    return context.json(await content.write(path, chunks, { ...ownership, maxBytes: maxUploadBytes }), 201);
  }
  throw new E2bError(405, `${method} is not a method of /volumecontent/…/${kind}.`);
}

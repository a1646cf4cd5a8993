/**
 * A request a node answers at another node once it has begun to read it: one that needs the key's
 * volumes, which another node of the cluster keeps (core/volume-homes.ts), found out only from its
 * body (a session's mounts) or its record (a paused session that mounted some). The forwarder
 * (forwarding.ts) sends requests on before reading them; this sends one on after, with the body
 * already read (Hono keeps it) or, unread, streamed, and passes the answer back as it comes. Once
 * only: a relayed request is never relayed again, so two nodes that disagree cannot loop.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Context } from 'hono';
import { VolumesElsewhereError } from '../../volumes/volume-errors.js';
import { FORWARDED_BY_HEADER } from '../core/cluster.js';
import { HOP_BY_HOP } from './hop-by-hop.js';

/** The header a relayed request carries: the node that relayed it. */
export const RELAYED_BY_HEADER = 'x-sandcell-relayed-by';
const CONNECT_TIMEOUT_MS = 3_000;

/**
 * The answer of the node `error` says to ask, for the request `context` is answering; undefined when
 * the error is no such thing, the request was relayed already, or that node could not be reached
 * (the caller answers the error itself, which says where the volumes are).
 */
export async function relayed(
  context: Context,
  error: unknown,
  node: string | undefined,
): Promise<Response | undefined> {
  if (!(error instanceof VolumesElsewhereError) || error.relayTo === undefined || node === undefined) return undefined;
  if (context.req.header(RELAYED_BY_HEADER) !== undefined) return undefined;
  return relay(context, error.relayTo.url, node).catch(() => undefined);
}

async function relay(context: Context, peerUrl: string, node: string): Promise<Response> {
  const { req } = context;
  const incoming = new URL(req.url);
  const target = new URL(`${incoming.pathname}${incoming.search}`, peerUrl);
  const headers: Record<string, string> = {};
  req.raw.headers.forEach((value, name) => {
    if (
      !HOP_BY_HOP.has(name) &&
      name !== 'content-length' &&
      name !== FORWARDED_BY_HEADER &&
      name !== RELAYED_BY_HEADER
    )
      headers[name] = value;
  });
  headers[FORWARDED_BY_HEADER] = node;
  headers[RELAYED_BY_HEADER] = node;
  let body: Buffer | Readable | undefined;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    // Read already (a JSON body the route parsed): the same bytes again. Unread: streamed through.
    if (Object.keys(req.bodyCache).length > 0) body = Buffer.from(await req.arrayBuffer());
    else if (req.raw.body && !req.raw.bodyUsed) body = Readable.fromWeb(req.raw.body as WebReadableStream);
  }
  if (Buffer.isBuffer(body)) headers['content-length'] = String(body.length);
  return new Promise<Response>((resolve, reject) => {
    const upstream = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, {
      method: req.method,
      headers,
    });
    const connecting = setTimeout(
      () => upstream.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    upstream.on('socket', (socket) => {
      if (socket.connecting) socket.once('connect', () => clearTimeout(connecting));
      else clearTimeout(connecting);
    });
    upstream.on('close', () => clearTimeout(connecting));
    upstream.on('error', reject);
    // The client went away: so does the relayed request (and its answer, if it had begun).
    req.raw.signal.addEventListener('abort', () => upstream.destroy(), { once: true });
    upstream.on('response', (answer) => {
      const status = answer.statusCode ?? 502;
      const bodyless = status === 204 || status === 304 || req.method === 'HEAD';
      resolve(
        new Response(bodyless ? null : (Readable.toWeb(answer) as ReadableStream<Uint8Array>), {
          status,
          headers: passedBack(answer.headers),
        }),
      );
      if (bodyless) answer.resume();
    });
    if (body instanceof Readable) body.pipe(upstream);
    else upstream.end(body);
  });
}

function passedBack(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

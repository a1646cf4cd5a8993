/**
 * envd's `/files`: download (`GET ?path=`, raw bytes) and upload (`POST`:
 * multipart with one or more parts named `file` whose file names are their
 * paths, or since envd 0.5.7 a raw `application/octet-stream` body, perhaps
 * gzip-compressed, with `?path=`). Uploads are bounded by the server's upload
 * limit (the dispatcher's body limit), after decompression too.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { Context } from 'hono';
import { FileOperationError } from '../../errors.js';
import type { ServerContext } from '../core/context.js';
import { readUploadForm } from '../http/multipart.js';
import { requestPath, resolveSandboxPath, sandboxPathOf } from './envd-paths.js';
import { E2bError } from './errors.js';
import type { E2bSandbox } from './sandbox-row.js';

const gunzipAsync = promisify(gunzip);

export async function downloadFile(context: Context, sandbox: E2bSandbox): Promise<Response> {
  const path = resolveSandboxPath(context.req.query('path'));
  const { root, relative } = path;
  let bytes: Buffer;
  try {
    bytes = await sandbox.entry.session.files.read(requestPath(path));
  } catch (error) {
    // The sandbox names the file under /mnt/data; the client asked for it under its own root.
    if (error instanceof FileOperationError && error.reason === 'not-found') {
      throw new E2bError(404, `No such file: ${sandboxPathOf(root, relative)}`);
    }
    throw error;
  }
  return context.body(new Uint8Array(bytes), 200, {
    'content-type': 'application/octet-stream',
    'content-length': String(bytes.length),
  });
}

interface Upload {
  path: string;
  bytes: Uint8Array;
}

async function rawUpload(context: Context, server: ServerContext): Promise<Upload[]> {
  const path = context.req.query('path');
  if (!path) throw new E2bError(400, 'A raw upload needs the file’s path in ?path=.');
  let bytes: Uint8Array = new Uint8Array(await context.req.arrayBuffer());
  const encoding = context.req.header('content-encoding')?.toLowerCase();
  if (encoding === 'gzip') {
    const limit = server.options.limits.maxUploadBytes;
    try {
      bytes = await gunzipAsync(bytes, { maxOutputLength: limit });
    } catch (error) {
      const tooLarge = (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
      throw tooLarge
        ? new E2bError(413, `The file is larger than this server accepts (${limit} bytes) once decompressed.`)
        : new E2bError(400, 'The body is not valid gzip.');
    }
  } else if (encoding !== undefined && encoding !== 'identity') {
    throw new E2bError(400, `Content-Encoding ${encoding} is not accepted; send gzip or none.`);
  }
  return [{ path, bytes }];
}

async function multipartUpload(context: Context, pathOnly: boolean): Promise<Upload[]> {
  const { files } = await readUploadForm(context, 'Upload files as multipart/form-data in the field `file`.');
  const path = context.req.query('path');
  if (pathOnly && path && files.length > 1) {
    // Several parts are named by their own paths, which the link's signature did not cover (envd refuses them too).
    throw new E2bError(400, `An upload link for one path takes one file; this request has ${files.length}.`);
  }
  // One part and ?path=: the SDK's write(path, data); several parts: writeFiles, each named by its path.
  return Promise.all(
    files.map(async (file) => ({
      path: files.length === 1 && path ? path : file.name,
      bytes: new Uint8Array(await file.arrayBuffer()),
    })),
  );
}

export interface UploadOptions {
  /**
   * Write only the file `?path=` names, when it names one: a signed upload link signs that path.
   * @default false
   */
  pathOnly?: boolean;
}

export async function uploadFiles(
  context: Context,
  sandbox: E2bSandbox,
  server: ServerContext,
  options: UploadOptions = {},
): Promise<Response> {
  const raw = /^application\/octet-stream\b/i.test(context.req.header('content-type') ?? '');
  const uploads = raw ? await rawUpload(context, server) : await multipartUpload(context, options.pathOnly ?? false);
  // Every path is checked before anything is written.
  const targets = uploads.map((upload) => ({ ...upload, ...resolveSandboxPath(upload.path) }));
  server.registry.admitUpload(sandbox.entry);
  const written = [];
  for (const target of targets) {
    // Up to the server's upload limit, which the body as a whole is within: not bound by the transfer limit.
    await server.registry.files.writeUpload(
      sandbox.entry,
      requestPath(target),
      [target.bytes],
      server.options.limits.maxUploadBytes,
    );
    const path = sandboxPathOf(target.root, target.relative);
    written.push({ name: path.slice(path.lastIndexOf('/') + 1), type: 'file', path });
  }
  return context.json(written, 200);
}

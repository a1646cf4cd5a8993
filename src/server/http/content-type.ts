/** Content types of files served back to clients, guessed from the extension. */
import type { Context } from 'hono';
import { IMAGE_TYPES, isRasterImage } from '../../protocol/images.js';

const TYPES: Record<string, string> = {
  ...Object.fromEntries(IMAGE_TYPES.map((type) => [type.extension, type.mimeType])),
  jpeg: 'image/jpeg',
  csv: 'text/csv; charset=utf-8',
  tsv: 'text/tab-separated-values; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  py: 'text/x-python; charset=utf-8',
  json: 'application/json',
  html: 'text/html; charset=utf-8',
  pdf: 'application/pdf',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  parquet: 'application/vnd.apache.parquet',
  zip: 'application/zip',
};

export function contentTypeFor(path: string): string {
  const extension = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  return TYPES[extension] ?? 'application/octet-stream';
}

/**
 * Headers for serving bytes the sandboxed code wrote: never sniffed, never
 * run as a page of this origin; images display inline, the rest downloads.
 */
export function fileHeaders(path: string, size: number): Record<string, string> {
  return {
    'content-type': contentTypeFor(path),
    'content-length': String(size),
    'content-disposition': contentDispositionFor(path),
    'x-content-type-options': 'nosniff',
    'content-security-policy': "sandbox; default-src 'none'",
  };
}

/** Images display inline, the rest downloads, under the file's own name. */
export function contentDispositionFor(path: string): string {
  const name = path.split('/').pop() ?? 'file';
  return `${isRasterImage(contentTypeFor(path)) ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** An image from an ImageStore, as the answer to GET …/images/{name}. */
export function imageResponse(context: Context, image: { name: string; mimeType: string; data: Buffer }): Response {
  return context.body(new Uint8Array(image.data), 200, {
    ...fileHeaders(image.name, image.data.length),
    'content-type': image.mimeType,
    'cache-control': 'private, max-age=3600, immutable',
  });
}

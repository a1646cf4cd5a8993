/** Uploads as multipart/form-data: the checks every upload route makes before writing anything. */
import type { Context } from 'hono';
import { badRequest, HttpError } from './errors.js';

export type UploadedFile = Exclude<ReturnType<FormData['get']>, string | null>;

export interface UploadForm {
  form: FormData;
  /** The files of the field `file` (at least one), each with a name. */
  files: UploadedFile[];
}

/** Reads the form; 415 when the body is not multipart, 400 when it is broken or has no named file. */
export async function readUploadForm(context: Context, how: string): Promise<UploadForm> {
  if (!/^multipart\/form-data\b/i.test(context.req.header('content-type') ?? '')) {
    throw new HttpError(415, 'unsupported-media-type', how);
  }
  let form: FormData;
  try {
    form = await context.req.raw.formData();
  } catch (error) {
    throw badRequest(`The multipart body could not be read: ${(error as Error).message}`, 'invalid-multipart');
  }
  const files = form.getAll('file').filter((value): value is UploadedFile => typeof value !== 'string');
  if (files.length === 0) throw badRequest('Send one or more files in the multipart field `file`.', 'no-file');
  if (files.some((file) => !file.name)) throw badRequest('Each uploaded file needs a file name.', 'no-file-name');
  return { form, files };
}

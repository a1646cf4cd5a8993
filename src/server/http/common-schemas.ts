/** The zod schemas every front door's HTTP routes share: the error body and the upload form. */
import { z } from 'zod';
import type * as Protocol from '../../protocol/index.js';

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Machine-readable, e.g. `invalid-path`, `session-not-found`.' }),
      message: z.string().meta({ description: 'What went wrong and what to do.' }),
    }),
  })
  .meta({ title: 'Error' });

export const UploadForm = z.object({
  file: z
    .array(z.string().meta({ format: 'binary' }))
    .meta({ description: 'One or more files; each is saved under its file name.' }),
  directory: z.string().optional().meta({ description: 'A directory under /mnt/data to save them in.' }),
});

// The schema and src/protocol/ describe the same shape, or this does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [Same<z.output<typeof ErrorSchema>, Protocol.ErrorBody>] = [true];
void sameShapes;

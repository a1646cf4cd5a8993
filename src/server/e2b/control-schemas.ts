/** The control plane's request bodies, bounded: what a create or a timeout may carry. */
import { z } from 'zod';
import { NetworkFields } from './network-fields.js';

/** E2B's own ceiling on a sandbox's lifetime (its Pro tier): 24 hours. */
export const MAX_TIMEOUT_SECONDS = 86_400;
/** What E2B gives a sandbox created without a timeout. */
export const DEFAULT_TIMEOUT_SECONDS = 300;
/** A list page: E2B's default and maximum. */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_TEMPLATE = 'code-interpreter-v1';

const MAX_METADATA_ENTRIES = 64;
const MAX_ENV_ENTRIES = 256;

const boundedRecord = (entries: number, keyLength: number, valueLength: number, what: string) =>
  z
    .record(z.string().min(1).max(keyLength), z.string().max(valueLength))
    .refine((record) => Object.keys(record).length <= entries, { message: `At most ${entries} ${what}.` });

export const Timeout = z.number().int().min(0).max(MAX_TIMEOUT_SECONDS);

export const CreateBody = z.looseObject({
  templateID: z.string().min(1).max(256).optional(),
  timeout: Timeout.optional(),
  metadata: boundedRecord(MAX_METADATA_ENTRIES, 256, 2048, 'metadata entries').nullish(),
  envVars: boundedRecord(MAX_ENV_ENTRIES, 256, 32_768, 'environment variables').nullish(),
  // The lifecycle: `lifecycle.onTimeout: 'pause'` is `autoPause: true`, `lifecycle.autoResume` is `autoResume.enabled`.
  autoPause: z.boolean().nullish(),
  autoPauseMemory: z.boolean().nullish(),
  autoResume: z.looseObject({ enabled: z.boolean().nullish() }).nullish(),
  // Volumes by name, each at a path (`readOnly` and `subPath` are sandcell's, beside E2B's two fields).
  volumeMounts: z
    .array(
      z.looseObject({
        name: z.string().min(1).max(64),
        path: z.string().min(1).max(256),
        readOnly: z.boolean().nullish(),
        subPath: z.string().max(4096).nullish(),
      }),
    )
    .max(16)
    .nullish(),
  ...NetworkFields,
});

/** `memory: false` asks for a resume from the files alone (the SDK's `onResume: 'reboot'`). */
export const ConnectBody = z.looseObject({ timeout: Timeout.optional(), memory: z.boolean().nullish() });

/** The deprecated resume: E2B gives a resumed sandbox 15 seconds unless told otherwise. */
export const ResumeBody = z.looseObject({
  timeout: Timeout.optional(),
  autoPause: z.boolean().nullish(),
  memory: z.boolean().nullish(),
});
export const DEFAULT_RESUME_TIMEOUT_SECONDS = 15;

/** `memory: false` (the SDK's `keepMemory: false`) asks for a pause that keeps the files alone. */
export const PauseBody = z.looseObject({ memory: z.boolean().nullish() });

/** At most this many forks per request (E2B's own bound). */
export const MAX_FORKS = 100;
/** What E2B gives a fork created without a timeout. */
export const DEFAULT_FORK_TIMEOUT_SECONDS = 15;
export const ForkBody = z.looseObject({
  timeout: Timeout.min(1).nullish(),
  count: z.number().int().min(1).max(MAX_FORKS).nullish(),
});

export const SnapshotBody = z.looseObject({ name: z.string().max(256).nullish() });

export const TimeoutBody = z.looseObject({ timeout: Timeout });

export type CreateRequest = z.output<typeof CreateBody>;

/**
 * E2B's signed file URLs: `sandbox.downloadUrl(path)` and `sandbox.uploadUrl(path)` hand out a link
 * that works without the SDK's headers (a browser, curl, another service):
 *
 *     http://HOST:PORT/files?path=…&username=…&signature=v1_…&signature_expiration=…
 *
 * The SDK builds it with `new URL('/files', sandboxUrl)`, which drops the `/e2b` of sandcell's
 * sandbox URL, so the link is at the server's root; and it names no sandbox (E2B's names it in the
 * host, `49983-<id>.e2b.app`, which sandcell's single host cannot). The signature is what finds it:
 * envd's `v1_` + unpadded base64 SHA-256 of `path:operation:username:envdAccessToken[:expiration]`
 * (operation `read` for a download, `write` for an upload; username '' when absent), checked here
 * against every sandbox the server holds. Only whoever holds a sandbox's envd token can make one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { E2bError } from './errors.js';
import type { SandboxRow } from './sandbox-row.js';
import type { SandboxTable } from './sandbox-table.js';

export type SignedOperation = 'read' | 'write';

/** Where the links point: `new URL('/files', …)` in the SDK. */
export const SIGNED_FILES_PATH = '/files';

/** `v1_` and a SHA-256 digest in standard base64 without its `=` padding (43 characters). */
export const SIGNATURE_FORMAT = /^v1_[A-Za-z0-9+/]{43}$/;
/** Unix seconds as the SDK writes them (no sign, no leading zero), as they enter the signed text. */
const EXPIRATION_FORMAT = /^(0|[1-9][0-9]{0,11})$/;
/** Bounds on what is hashed per sandbox: a path as long as Linux's PATH_MAX, a generous user name. */
const MAX_PATH_LENGTH = 4096;
const MAX_USERNAME_LENGTH = 256;

/** One answer for every signature that opens nothing, so a link reveals no sandbox that it does not open. */
const NOT_VALID =
  'This link’s signature is not valid: it was made for another path or user, or to download rather than ' +
  'upload (or the reverse), or it was altered, or its sandbox is gone. Get a new link from ' +
  'sandbox.downloadUrl() or sandbox.uploadUrl().';

interface SignedQuery {
  path: string;
  username: string;
  signature: string;
  expiration?: string;
}

/** The signed link's query, bounded and in the signature's shape; anything else is a 400. */
function parseSignedQuery(context: Context): SignedQuery {
  const signature = context.req.query('signature') ?? '';
  const expiration = context.req.query('signature_expiration');
  const path = context.req.query('path') ?? '';
  const username = context.req.query('username') ?? '';
  if (!SIGNATURE_FORMAT.test(signature)) {
    throw new E2bError(400, 'The link’s signature is malformed: expected v1_ and 43 base64 characters.');
  }
  if (expiration !== undefined && !EXPIRATION_FORMAT.test(expiration)) {
    throw new E2bError(400, 'The link’s signature_expiration is malformed: expected Unix seconds.');
  }
  if (path.length > MAX_PATH_LENGTH) {
    throw new E2bError(400, `The link’s path is longer than ${MAX_PATH_LENGTH} characters.`);
  }
  if (username.length > MAX_USERNAME_LENGTH) {
    throw new E2bError(400, `The link’s username is longer than ${MAX_USERNAME_LENGTH} characters.`);
  }
  return { path, username, signature, ...(expiration !== undefined ? { expiration } : {}) };
}

/** envd's signature of a link (validateSigning in e2b-dev/infra's envd; getSignature in the SDKs). */
export function signatureOf(query: Omit<SignedQuery, 'signature'>, operation: SignedOperation, token: string): string {
  const fields = [query.path, operation, query.username, token];
  if (query.expiration !== undefined) fields.push(query.expiration);
  const digest = createHash('sha256').update(fields.join(':'), 'utf8').digest('base64');
  return `v1_${digest.replace(/=+$/, '')}`;
}

/**
 * The sandbox a signed link opens for `operation`, before anything of the request is served: an
 * expired link is a 401 that says so (its expiration is the client's own value: saying so reveals
 * nothing), a signature no sandbox made is a 401 with one message whatever the reason.
 */
export async function sandboxOfSignedLink(
  context: Context,
  table: SandboxTable,
  operation: SignedOperation,
): Promise<SandboxRow> {
  const query = parseSignedQuery(context);
  if (query.expiration !== undefined && Number(query.expiration) < Math.floor(Date.now() / 1000)) {
    const at = new Date(Number(query.expiration) * 1000).toISOString();
    throw new E2bError(
      401,
      `This link expired at ${at}. Get a new one from sandbox.downloadUrl() or sandbox.uploadUrl(), with a longer useSignatureExpiration (seconds) or none.`,
    );
  }
  const presented = Buffer.from(query.signature, 'ascii');
  const row = await table.findByEnvdToken((token) => {
    const expected = Buffer.from(signatureOf(query, operation, token), 'ascii');
    // Both are 46 ASCII characters (SIGNATURE_FORMAT); compared without revealing where they differ.
    return expected.length === presented.length && timingSafeEqual(expected, presented);
  });
  if (!row) throw new E2bError(401, NOT_VALID);
  return row;
}

/**
 * A tiny package index for pip, over HTTPS with the test CA: one wheel, built here with Python's
 * zipfile (a module that sets VALUE), served at /simple/sandcell-probe/ as PEP 503 describes.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const WHEEL = 'sandcell_probe-1.0-py3-none-any.whl';

const BUILD_WHEEL = `
import base64, hashlib, sys, zipfile
files = {
    "sandcell_probe/__init__.py": "VALUE = %r\\n" % sys.argv[2],
    "sandcell_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: sandcell-probe\\nVersion: 1.0\\n",
    "sandcell_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: sandcell-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
for name, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(text.encode())))
record.append("sandcell_probe-1.0.dist-info/RECORD,,")
files["sandcell_probe-1.0.dist-info/RECORD"] = "\\n".join(record) + "\\n"
with zipfile.ZipFile(sys.argv[1], "w") as wheel:
    for name, text in files.items():
        wheel.writestr(name, text)
`;

export interface TinyIndex {
  port: number;
  /** Paths asked for, in order. */
  requested: string[];
  close(): Promise<void>;
}

export async function startTinyIndex(tls: { key: string; cert: string }, value: string): Promise<TinyIndex> {
  const directory = mkdtempSync(path.join(tmpdir(), 'sandcell-tiny-index-'));
  const wheelPath = path.join(directory, WHEEL);
  execFileSync('python3', ['-c', BUILD_WHEEL, wheelPath, value]);
  const wheel = readFileSync(wheelPath);
  rmSync(directory, { recursive: true, force: true });
  const sha256 = createHash('sha256').update(wheel).digest('hex');
  const requested: string[] = [];
  const server = https.createServer(tls, (request, response) => {
    requested.push(request.url ?? '');
    if (request.url === '/simple/sandcell-probe/') {
      response.setHeader('content-type', 'text/html');
      response.end(
        `<!DOCTYPE html><html><body><a href="/packages/${WHEEL}#sha256=${sha256}">${WHEEL}</a></body></html>`,
      );
    } else if (request.url === `/packages/${WHEEL}`) {
      response.setHeader('content-type', 'application/octet-stream');
      response.end(wheel);
    } else {
      response.statusCode = 404;
      response.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requested,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

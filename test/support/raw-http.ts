/**
 * HTTP requests with headers a browser would send and fetch() will not let a test forge
 * (`Host`, `Origin`, `Sec-Fetch-*`), over node:http to a real server on 127.0.0.1.
 */
import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
  json: any;
}

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The client address to connect from (any 127.x.y.z is this machine). */
  localAddress?: string;
}

/** Sends one request to `port` on 127.0.0.1 on a fresh connection. */
export function rawRequest(port: number, path: string, request: RawRequest = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: request.method ?? 'GET',
        headers: {
          host: `127.0.0.1:${port}`,
          ...(request.body !== undefined ? { 'content-length': String(Buffer.byteLength(request.body)) } : {}),
          ...request.headers,
        },
        agent: false,
        ...(request.localAddress ? { localAddress: request.localAddress } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
        });
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

/** A multipart/form-data body with one file in the field `file`, as an HTML form posts it. */
export function formWithFile(name: string, content: string): { body: string; contentType: string } {
  const boundary = '----sandcellTestBoundary7MA4YWxkTrZu0gW';
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
    `Content-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`;
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Resolves when `check()` is true, polling; throws with `what` after `deadlineMs` (a bound, not a measured time). */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  deadlineMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what} after ${deadlineMs} ms.`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Conversation uploads over real HTTP on a real sandbox: a 60 MiB CSV is
 * previewed from its first rows while the server goes on answering another
 * client, in bounded memory, and the preview is right (columns, dtypes, the
 * whole file's row count, said honestly). That uploads take tokens from the
 * key's rate limit is in src/server/conversations/uploads.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Turn } from '../src/protocol/index.js';
import { client, startTestServer } from './support/server.js';

type Server = Awaited<ReturnType<typeof startTestServer>>;
const UPLOADER = 'uploader-key-0123456789';
const OTHER = 'other-client-key-0123456789';
const MiB = 1024 * 1024;
const ANSWERED = 'other client answered';

/** A CSV of at least `bytes`: id (int), ratio (float), a quoted city with a comma, a flag (bool). */
function bigCsv(bytes: number): { data: Buffer; rows: number } {
  const data = Buffer.allocUnsafe(bytes + 1024);
  let size = data.write('id,ratio,city,flag\n');
  let rows = 0;
  for (; size < bytes; rows++) {
    size += data.write(`${rows},${rows / 8},"City ${rows % 97}, North",${rows % 2 ? 'True' : 'False'}\n`, size);
  }
  return { data: data.subarray(0, size), rows };
}

/** One file as multipart/form-data, built around the bytes without copying them into a Blob first. */
function multipart(name: string, data: Uint8Array): { body: ReadableStream<Uint8Array>; contentType: string } {
  const boundary = `----sandcell${Date.now()}`;
  const parts = [
    Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${name}"\r\ncontent-type: text/csv\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ];
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const part = parts.shift();
      if (part) controller.enqueue(part);
      else controller.close();
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('a 60 MiB upload to a conversation', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ apiKeys: [UPLOADER, OTHER], logLevel: 'debug' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is previewed from its first rows while another client is answered, in bounded memory', async () => {
    const uploader = client(server, UPLOADER);
    const other = client(server, OTHER);
    const conversation = await uploader.json<{ id: string }>('/v1/conversations', { method: 'POST', json: {} });
    const mine = await other.json<{ id: string }>('/v1/conversations', { method: 'POST', json: {} });
    const { data, rows } = bigCsv(60 * MiB);
    let peakRss = process.memoryUsage().rss;

    // The other client asks again and again while the upload runs; each answer is marked in the
    // server's log stream, so the order of its answers and the server's own events is one sequence.
    let uploading = true;
    let answered = 0;
    const otherClient = (async () => {
      while (uploading) {
        const response = await other(`/v1/conversations/${mine.id}`);
        expect(response.status).toBe(200);
        await response.json();
        answered++;
        server.logs.lines.push({ msg: ANSWERED });
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
      }
    })();
    const { body, contentType } = multipart('big.csv', data);
    const response = await uploader(`/v1/conversations/${conversation.id}/files`, {
      method: 'POST',
      body,
      headers: { 'content-type': contentType },
      duplex: 'half',
    } as RequestInit);
    const text = await response.text();
    uploading = false;
    await otherClient;
    expect(response.status, text).toBe(201);

    // Other requests were answered while the preview was being computed.
    const messages = server.logs.lines.map((line) => line.msg);
    const started = messages.indexOf('previewing an upload');
    const finished = messages.indexOf('upload previewed');
    expect(started).toBeGreaterThanOrEqual(0);
    expect(finished).toBeGreaterThan(started);
    const answeredDuringPreview = messages.slice(started, finished).filter((message) => message === ANSWERED).length;
    expect(answeredDuringPreview, `answers during the preview (of ${answered} in all)`).toBeGreaterThan(0);

    // Memory stays far from what parsing every row took (~4.4 GB): the body, its copies for the sandbox.
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    expect(peakRss).toBeLessThan(1024 * MiB);

    // The preview is right: columns and dtypes from the first rows, every row counted, said honestly.
    const file = (JSON.parse(text) as { turn: Turn }).turn.files?.[0];
    expect(file).toMatchObject({ path: 'big.csv', size: data.length, format: 'csv', rows });
    expect(file?.columns).toEqual([
      { name: 'id', dtype: 'int64' },
      { name: 'ratio', dtype: 'float64' },
      { name: 'city', dtype: 'object' },
      { name: 'flag', dtype: 'bool' },
    ]);
    expect(file?.head?.rows[0]).toEqual(['0', '0', 'City 0, North', 'False']);
    expect(file?.text).toContain(`Shape: ${rows} rows × 4 columns (rows counted in the whole file).`);
    expect(file?.text).toMatch(/judged from the first \d+ rows only/);

    // The file is whole in the session.
    const listing = await uploader.json<{ files: { path: string; size: number }[] }>(
      `/v1/sessions/${(await uploader.json<{ sessionId: string }>(`/v1/conversations/${conversation.id}`)).sessionId}/files`,
    );
    expect(listing.files).toContainEqual(expect.objectContaining({ path: 'big.csv', size: data.length }));
  }, 180_000);
});

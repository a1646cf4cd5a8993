import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AttachmentRefusedError,
  attachmentFileName,
  checkAttachment,
  downloadAttachment,
} from './attachment-limits.js';

const MIB = 1024 * 1024;
let server: Server;
let base: string;
/** Bytes each route sent before the client stopped reading. */
const sent = new Map<string, number>();

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? '';
    sent.set(path, 0);
    if (path === '/small.csv') {
      response.end('a,b\n1,2\n');
      return;
    }
    if (path === '/declared-big') {
      response.writeHead(200, { 'content-length': String(5 * MIB) });
      response.end(Buffer.alloc(5 * MIB));
      return;
    }
    // No Content-Length: chunks until the client goes away (or 64 MiB).
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024);
    const write = () => {
      while ((sent.get(path) ?? 0) < 64 * MIB) {
        sent.set(path, (sent.get(path) ?? 0) + chunk.length);
        if (!response.write(chunk)) return void response.once('drain', write);
      }
      response.end();
    };
    response.on('close', () => response.destroy());
    write();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('downloadAttachment', () => {
  it('downloads a file within the limit', async () => {
    expect((await downloadAttachment(`${base}/small.csv`, 'small.csv', MIB)).toString()).toBe('a,b\n1,2\n');
  });

  it('refuses a declared Content-Length over the limit, naming the file and the limit', async () => {
    await expect(downloadAttachment(`${base}/declared-big`, 'big.csv', MIB)).rejects.toThrow(/big\.csv is over 1 MiB/);
  });

  it('stops reading an undeclared stream at the limit', async () => {
    const refused = downloadAttachment(`${base}/endless`, 'endless.bin', MIB);
    await expect(refused).rejects.toBeInstanceOf(AttachmentRefusedError);
    // The server stopped well before its 64 MiB: the client read little past the limit.
    expect(sent.get('/endless')!).toBeLessThan(32 * MIB);
  });
});

describe('checkAttachment', () => {
  const limits = { fileBytes: 10 * MIB, conversationBytes: 15 * MIB };

  it('takes a file within both limits', () => {
    expect(() => checkAttachment('a.csv', 5 * MIB, 5 * MIB, limits)).not.toThrow();
  });

  it('refuses a file over the per-file limit, naming it and the limit', () => {
    expect(() => checkAttachment('big.csv', 30 * MIB, 0, limits)).toThrow('big.csv is 30 MiB; the limit is 10 MiB');
  });

  it("refuses a file that would pass the conversation's limit", () => {
    expect(() => checkAttachment('more.csv', 6 * MIB, 10 * MIB, limits)).toThrow(/15 MiB per conversation/);
  });
});

describe('attachmentFileName', () => {
  it('keeps the last segment and plain characters', () => {
    expect(attachmentFileName('../../etc/passwd')).toBe('passwd');
    expect(attachmentFileName('sales 2024 (final).csv')).toBe('sales_2024_final_.csv');
    expect(attachmentFileName('...')).toBe('attachment');
  });
});

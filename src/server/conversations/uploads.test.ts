/**
 * Conversation uploads take tokens from the key's rate limit like executions,
 * over real HTTP on 127.0.0.1; the scripted backend's /mnt/data holds them. A
 * 60 MiB upload on a real sandbox is in test/server-conversation-uploads.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startScriptedServer } from '../../../test/support/server.js';
import type { Turn } from '../../protocol/index.js';

type Server = Awaited<ReturnType<typeof startScriptedServer>>;
const UPLOADER = 'uploader-key-0123456789';
const OTHER = 'other-client-key-0123456789';

function form(name: string, data: Uint8Array | string): FormData {
  const body = new FormData();
  body.append('file', new Blob([data]), name);
  return body;
}

describe('uploads and the rate limit', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startScriptedServer(undefined, { apiKeys: [UPLOADER, OTHER], limits: { executionsPerMinute: 3 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('take tokens from the key’s bucket: past it, 429 with Retry-After; other keys go on', async () => {
    const uploader = client(server, UPLOADER);
    const conversation = await uploader.json<{ id: string }>('/v1/conversations', { method: 'POST', json: {} });
    const files = `/v1/conversations/${conversation.id}/files`;
    for (let index = 0; index < 3; index++) {
      const accepted = await uploader(files, { method: 'POST', body: form(`f${index}.csv`, 'a\n1\n') });
      expect(accepted.status).toBe(201);
    }
    const refused = await uploader(files, { method: 'POST', body: form('late.csv', 'a\n1\n') });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate-limited');
    // Executions share the bucket.
    const cell = await uploader(`/v1/conversations/${conversation.id}/cells`, { method: 'POST', json: { code: '1' } });
    expect(cell.status).toBe(429);
    // Nothing of the refused upload was written; the turns are the three accepted uploads.
    const view = await uploader.json<{ turns: Turn[] }>(`/v1/conversations/${conversation.id}`);
    expect(view.turns.map((turn) => turn.files?.[0]?.path)).toEqual(['f0.csv', 'f1.csv', 'f2.csv']);
    // Another key has its own bucket.
    const other = client(server, OTHER);
    const theirs = await other.json<{ id: string }>('/v1/conversations', { method: 'POST', json: {} });
    const upload = await other(`/v1/conversations/${theirs.id}/files`, {
      method: 'POST',
      body: form('x.csv', 'a\n1\n'),
    });
    expect(upload.status).toBe(201);
  });
});

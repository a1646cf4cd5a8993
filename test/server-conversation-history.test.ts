/**
 * What a conversation keeps is bounded, with outputs of tens of MiB from a
 * real kernel: the history and its notebook export still answer 200 with
 * valid JSON, each output cut with a note, while the conversation keeps
 * working. The bounds' own logic (cuts, oldest outputs first, then oldest
 * turns, per key) runs on the scripted backend in
 * src/server/conversations/history-limits.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Conversation } from '../src/protocol/index.js';
import { codeStep, readBack, runCell } from './support/conversation-events.js';
import { client, startTestServer } from './support/server.js';

type Server = Awaited<ReturnType<typeof startTestServer>>;
const KiB = 1024;
const MiB = 1024 * KiB;
const CUT =
  /\[output cut: this conversation keeps the first [\d.]+ [KM]iB of each step's output; the rest was not kept\]/;

describe('with the default bounds', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('18 cells of 30 MiB values and prints: the history and the export still answer, each output cut with a note', async () => {
    const api = client(server);
    const { id } = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    for (let index = 0; index < 18; index++) {
      const turn = await runCell(api, id, index % 2 ? "print('y' * (30 << 20))" : "'y' * (30 << 20)");
      const step = codeStep(turn);
      const kept = index % 2 ? step.stdout : String(step.results[0]?.data['text/plain'] ?? '');
      expect(kept.length).toBeLessThan(1 * MiB + 1024);
      // A 30 MiB value passes the session's result cap: the conversation cuts it. (Stdout is cut by the
      // session at its own cap first; a session that drops the value leaves nothing to cut.)
      if (index % 2 === 0 && step.results.length > 0) expect(kept).toMatch(CUT);
    }
    const { conversation, bytes, notebook } = await readBack(api, id);
    expect(conversation.turnCount).toBe(18);
    expect(bytes).toBeLessThan(32 * MiB + 64 * KiB);
    expect(JSON.stringify(notebook).length).toBeLessThan(40 * MiB);
    // Still working.
    const after = await runCell(api, id, "print('still here')");
    expect(codeStep(after).stdout).toBe('still here\n');
  }, 300_000);
});

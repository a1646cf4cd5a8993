/**
 * A conversation goes on across a restart, for real: a server with a state
 * directory and bubblewrap sessions runs a notebook cell that builds a pandas
 * DataFrame (and a generator, which no snapshot keeps); `server.close()`
 * pauses the session; a new server on the same directory resumes it at the
 * conversation's next cell, which sees the DataFrame, and the turn says the
 * generator did not come back. The server's own logic (idle pauses, lost
 * sessions, the model's view) is src/server/conversations/resume.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Conversation, ConversationSummary } from '../src/protocol/index.js';
import { codeStep, runCell } from './support/conversation-events.js';
import { client, startTestServer } from './support/server.js';

let stateDirectory: string;
beforeAll(async () => {
  stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-conversation-resume-'));
});
afterAll(() => rm(stateDirectory, { recursive: true, force: true }));

it('a conversation continued after a restart sees its DataFrame', async () => {
  const options = { logLevel: 'info', preloadModules: [], stateDirectory };
  const before = await startTestServer(options);
  let conversation: Conversation;
  try {
    const api = client(before);
    conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const built = await runCell(
      api,
      conversation.id,
      "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [10, 20, 30]})\ngen = (i for i in range(3))\nprint(len(df))",
    );
    expect(codeStep(built).stdout).toBe('3\n');
  } finally {
    await before.close();
  }
  expect(before.logs.lines).toContainEqual(
    expect.objectContaining({ msg: 'session paused', session: conversation.sessionId, reason: 'shutdown' }),
  );

  const after = await startTestServer(options);
  try {
    const api = client(after);
    const listed = await api.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    expect(listed.conversations).toEqual([expect.objectContaining({ id: conversation.id, status: 'active' })]);
    const summed = await runCell(api, conversation.id, 'print(int(df.sum().sum()))');
    expect(codeStep(summed).stdout).toBe('66\n');
    expect(summed.resumed).toMatchObject({
      skipped: [{ name: 'gen', reason: 'generator' }],
      message: '1 variable could not be restored: gen (generator).',
    });
    const history = await api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(history).toMatchObject({ status: 'active', sessionId: conversation.sessionId, turnCount: 2 });
  } finally {
    await after.close();
  }
});

/**
 * FileAccessAgent on the scripted model: it reads host files only inside the
 * data roots and copies them into the session, whose files here are the
 * scripted backend's.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { createSession, type Session } from '../session/session.js';
import { FileAccessAgent } from './index.js';
import { ScriptedChatModel } from './scripted-chat-model.js';

const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-file-access-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

describe('FileAccessAgent', () => {
  let session: Session | undefined;

  afterEach(async () => {
    await session?.close();
    session = undefined;
  });

  it('refuses paths outside the data roots, and reads a file inside', async () => {
    const dataDir = path.join(workspace, 'data');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(path.join(dataDir, 'sales.csv'), 'region,amount\nnorth,10\nsouth,12.5\n');
    writeFileSync(path.join(workspace, 'secret.txt'), 'secret');
    symlinkSync(path.join(workspace, 'secret.txt'), path.join(dataDir, 'escape.csv'));
    session = await createSession({ backend: createScriptedBackend() });
    const model = new ScriptedChatModel({
      responses: [
        {
          toolCalls: [
            { name: 'safe_file_access', arguments: { path: '../../etc/passwd' } },
            { name: 'safe_file_access', arguments: { path: '/etc/passwd' } },
            { name: 'safe_file_access', arguments: { path: 'escape.csv' } },
            { name: 'safe_file_access', arguments: { path: 'sales.csv' } },
          ],
        },
        { text: 'sales.csv has 2 rows.' },
      ],
    });
    const agent = new FileAccessAgent({ model, dataRoots: [dataDir], files: session.files });
    const answer = await agent.ask('Load the sales data.');
    expect(answer.text).toBe('sales.csv has 2 rows.');
    const results = model.calls[1]!.messages.flatMap((message) => (message.role === 'tool' ? [message] : []));
    expect(results[0]!.content).toContain('".." is not allowed');
    expect(results[1]!.content).toContain('absolute paths are not allowed');
    expect(results[2]!.content).toContain('points outside the shared data');
    expect(results.slice(0, 3).every((result) => !result.content.includes('secret'))).toBe(true);
    expect(results[3]!.content).toContain('Shape: 2 rows × 2 columns');
    expect(results[3]!.content).toMatch(/amount\s+float64/);
    expect((await session.files.list()).map((entry) => entry.path)).toEqual(['sales.csv']);
    expect((await session.files.read('sales.csv')).toString()).toContain('south,12.5');
    expect(existsSync(path.join(dataDir, 'sales.csv'))).toBe(true);
  });
});

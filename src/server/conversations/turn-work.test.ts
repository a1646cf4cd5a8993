/**
 * What each kind of turn does, on a conversation's real parts over the registry on the scripted
 * backend: a cell runs in its language, its output streamed into the turn, the files it wrote (and
 * only those) linked; an upload lands in /mnt/data with its preview in the turn, and the model is
 * told of it; a question ends with the model's answer. Through a conversation over HTTP:
 * cells.test.ts, messages.test.ts, uploads.test.ts.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { fold } from '../../../test/support/conversation-events.js';
import { byCode, printed, value, writes } from '../../../test/support/kernel-script.js';
import { ALICE, useScriptedRuntimes } from '../../../test/support/scripted-registry.js';
import { ScriptedChatModel } from '../../agents/scripted-chat-model.js';
import { createScriptedBackend } from '../../backends/scripted/index.js';
import type { ConversationEvent, Turn } from '../../protocol/index.js';
import { ImageStore } from '../core/image-store.js';
import { ConversationLinks } from './conversation-links.js';
import { ConversationSession } from './conversation-session.js';
import type { RunningTurn } from './running-turn.js';
import { TurnEvents } from './turn-events.js';
import { TurnLoop } from './turn-loop.js';
import { TurnWork } from './turn-work.js';

const { scriptedRuntime } = useScriptedRuntimes();
const logger = pino({ level: 'silent' });
const OUTPUT_BYTES = 64 * 1024;

const kernel = byCode({
  'print("hello")': [printed('hello\n')],
  "open('before.csv','w').write('x')": writes('before.csv', 'x'),
  "open('out.csv','w').write('a,b\\n1,2\\n')": writes('out.csv', 'a,b\n1,2\n', value('8')),
  'which language': ({ language }) => [value(language)],
});

/** A conversation's parts on a new session, as the conversation puts them together, and a turn to run on them. */
async function parts(model?: ScriptedChatModel) {
  const { registry } = scriptedRuntime({ backend: createScriptedBackend({ execute: kernel }) });
  const entry = await registry.create(ALICE, 'conversation');
  const turns: Turn[] = [];
  const links = new ConversationLinks('conversation-1', new ImageStore(), () => entry);
  const host = { touch: () => undefined, turnChanged: () => undefined, keepWithinLimits: () => undefined };
  const loop = new TurnLoop({ ...host, turns, outputBytes: OUTPUT_BYTES, logger });
  const events = new TurnEvents({
    ...host,
    running: () => loop.running,
    turn: () => loop.turn(),
    emit: (event) => loop.emit(event),
    links,
    outputBytes: OUTPUT_BYTES,
  });
  const session = new ConversationSession({
    registry,
    logger,
    model,
    conversationId: 'conversation-1',
    owner: ALICE,
    sessionId: entry.id,
    turns: () => turns,
    approve: (request) => loop.requestApproval(request),
    onEvent: (event) => events.agentEvent(event),
    onPublished: (files) => links.notePublished(files),
    onExpired: () => loop.cancel(),
  });
  await session.bind(entry);
  const work = new TurnWork({ registry, turns, loop, session, links, events });
  const run = async (kind: Turn['kind'], input: string, turnWork: (running: RunningTurn) => Promise<void>) => {
    const heard: ConversationEvent[] = [];
    const turn = await loop.start({ kind, input, approval: 'auto', listener: (event) => heard.push(event) }, turnWork)
      .done;
    expect(fold(heard)).toEqual(turn);
    return { turn, heard };
  };
  return { registry, entry, session, work, run };
}

const types = (events: ConversationEvent[]) => events.map((event) => event.type);

describe('TurnWork', () => {
  it('runs a cell, streaming its output into the turn; another language is recorded on its step', async () => {
    const { entry, work, run } = await parts();
    const cell = (code: string, language: 'python' | 'javascript' = 'python') =>
      run('cell', code, (running) => work.cell(running, entry, code, { language }));
    const { turn, heard } = await cell('print("hello")');
    expect(types(heard)).toEqual(['turn-start', 'execution-start', 'stdout-delta', 'execution-end', 'turn-end']);
    expect(turn.status).toBe('done');
    expect(turn.steps).toEqual([
      expect.objectContaining({
        type: 'code',
        callId: turn.id,
        code: 'print("hello")',
        stdout: 'hello\n',
        status: 'ok',
      }),
    ]);
    expect(turn.steps[0]).not.toHaveProperty('language');

    const other = (await cell('which language', 'javascript')).turn.steps[0];
    expect(other).toMatchObject({ language: 'javascript', results: [{ data: { 'text/plain': 'javascript' } }] });
  });

  it('links the files a cell wrote, and not those written before it', async () => {
    const { registry, entry, work, run } = await parts();
    await registry.execute(entry, "open('before.csv','w').write('x')");
    const code = "open('out.csv','w').write('a,b\\n1,2\\n')";
    const { turn } = await run('cell', code, (running) => work.cell(running, entry, code, { language: 'python' }));
    const step = turn.steps[0];
    expect(step?.type === 'code' && step.files).toEqual([
      {
        path: 'out.csv',
        size: 8,
        kind: 'file',
        url: expect.stringMatching(new RegExp(`/${entry.id}/files/out\\.csv$`)),
      },
    ]);
  });

  it('writes an upload into /mnt/data and keeps its preview in the turn; with a model, the model is told', async () => {
    const model = new ScriptedChatModel();
    const { entry, session, work, run } = await parts(model);
    const files = [{ name: 'data.csv', bytes: Buffer.from('a,b\n1,2\n3,4\n') }];
    const { turn, heard } = await run('upload', '', (running) => work.upload(running, files));
    expect(types(heard)).toEqual(['turn-start', 'turn-end']);
    expect(turn.files).toEqual([
      expect.objectContaining({
        path: 'data.csv',
        size: 12,
        format: 'csv',
        url: expect.stringContaining('/files/data.csv'),
      }),
    ]);
    expect((await entry.session.files.read('data.csv')).toString()).toBe('a,b\n1,2\n3,4\n');
    expect(session.chat!.pythonAgent.instructions).toContain('A data file the user added');
  });

  it('asks the model, and the answer ends the turn, said even when the model gave no words', async () => {
    const model = new ScriptedChatModel();
    const { session, work, run } = await parts(model);
    const ask = (content: string) => run('message', content, (running) => work.ask(running, session.chat!, content));
    model.enqueue({ text: 'Two.' });
    const { turn, heard } = await ask('What is 1+1?');
    expect(turn.steps).toEqual([{ type: 'text', text: 'Two.' }]);
    expect(turn.answer).toMatchObject({ stopReason: 'answer' });
    expect(heard.at(-2)?.type).toBe('answer-end');
    expect(model.calls[0]?.messages.map((message) => message.content)).toContain('What is 1+1?');

    model.enqueue({ text: '' });
    const silent = await ask('And nothing?');
    // The agent's words for a stop without any: not streamed, so the answer says them.
    expect(silent.turn.steps).toEqual([
      { type: 'text', text: expect.stringMatching(/^I stopped after \d+ steps without reaching an answer\.$/) },
    ]);
    expect(types(silent.heard)).toEqual(['turn-start', 'step-start', 'answer-delta', 'answer-end', 'turn-end']);
  });
});

/**
 * What a conversation keeps is bounded, over real HTTP on 127.0.0.1 with
 * kernels answering from a script: each step's output is cut with a note, a
 * conversation's history and a key's conversations stay under their bounds
 * (oldest outputs first, then oldest turns), and the history and its notebook
 * export always answer 200 with valid JSON while the conversation keeps
 * working. Tens of MiB from a real kernel: test/server-conversation-history.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeStep, readBack, runCell } from '../../../test/support/conversation-events.js';
import { type Answer, assign, byCode, figure, printed, raised, value } from '../../../test/support/kernel-script.js';
import { type Client, client, startScriptedServer } from '../../../test/support/server.js';
import type { Conversation, ConversationEvent, Turn } from '../../protocol/index.js';
import { applyConversationEvent } from '../../protocol/index.js';

type Server = Awaited<ReturnType<typeof startScriptedServer>>;
const KiB = 1024;
const CUT =
  /\[output cut: this conversation keeps the first [\d.]+ [KM]iB of each step's output; the rest was not kept\]/;
const DROPPED =
  /^\[output dropped: this conversation keeps [\d.]+ [KM]iB of history, and its oldest outputs go first\]\n$/;

const letter = (index: number) => String.fromCharCode(65 + index);
const big = (index: number) => `x${index} = 1  # ${'c'.repeat(100 * KiB)}`;
/** `print('<text>' * 60_000)` for each text, as the cells below write it. */
const prints = (texts: string[]): [string, Answer][] =>
  texts.map((text) => [`print('${text}' * 60_000)`, [printed(`${text.repeat(60_000)}\n`)]]);

const kernel = byCode({
  "print('a' * 200_000)\ndisplay({'text/plain': 'b' * 10, 'text/html': '<b>x</b>'}, raw=True)": [
    printed(`${'a'.repeat(200_000)}\n`),
    { type: 'display', data: { 'text/plain': 'b'.repeat(10), 'text/html': '<b>x</b>' } },
  ],
  "display({'text/plain': 'r' * 100_000, 'text/html': 'h' * 100}, raw=True)": [
    { type: 'display', data: { 'text/plain': 'r'.repeat(100_000), 'text/html': 'h'.repeat(100) } },
  ],
  "raise ValueError('E' * 300_000)": [raised('ValueError', 'E'.repeat(300_000))],
  'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()': [figure()],
  ...Object.fromEntries(prints(Array.from({ length: 12 }, (_, index) => letter(index)))),
  ...Object.fromEntries(prints(Array.from({ length: 7 }, (_, index) => String(index)))),
  ...Object.fromEntries(Array.from({ length: 6 }, (_, index) => [big(index), assign(`x${index}`, '1')])),
  'x5 + 41': ({ state }) => [value(String(Number(state.get('x5')) + 41))],
});

describe('with small bounds', () => {
  let server: Server;
  let api: Client;
  const limits = { output: 64 * KiB, history: 512 * KiB, key: 768 * KiB };
  beforeAll(async () => {
    server = await startScriptedServer(kernel, {
      apiKeys: ['history-key-0123456789', 'other-key-0123456789'],
      conversationOutputBytes: limits.output,
      conversationHistoryBytes: limits.history,
      limits: { conversationBytes: limits.key },
    });
    api = client(server, 'history-key-0123456789');
  });
  afterAll(async () => {
    await server?.close();
  });

  it('cuts a step’s stdout, results and error with a note; the live stream and the history agree', async () => {
    const { id } = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const response = await api(`/v1/conversations/${id}/cells`, {
      method: 'POST',
      json: { code: "print('a' * 200_000)\ndisplay({'text/plain': 'b' * 10, 'text/html': '<b>x</b>'}, raw=True)" },
      headers: { accept: 'text/event-stream' },
    });
    const events = (await response.text())
      .split('\n\n')
      .filter((block) => block.trim() !== '')
      .map((block) => JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? 'null') as ConversationEvent);
    const [first, ...rest] = events;
    if (first?.type !== 'turn-start') throw new Error('no turn-start');
    const folded = rest.reduce(applyConversationEvent, first.turn);
    const last = events[events.length - 1];
    if (last?.type !== 'turn-end') throw new Error('no turn-end');
    expect(folded).toEqual(last.turn);
    const printed = codeStep(last.turn);
    expect(printed.stdout.startsWith('a'.repeat(60 * KiB))).toBe(true);
    expect(printed.stdout).toMatch(CUT);
    expect(Buffer.byteLength(printed.stdout)).toBeLessThan(limits.output + 200);
    expect(printed.results).toEqual([]); // after the cut, nothing more is kept

    const shown = codeStep(
      await runCell(api, id, "display({'text/plain': 'r' * 100_000, 'text/html': 'h' * 100}, raw=True)"),
    );
    const text = String(shown.results[0]?.data['text/plain']);
    expect(text.startsWith('r'.repeat(60 * KiB))).toBe(true);
    expect(text).toMatch(CUT);

    const failed = codeStep(
      await api.json<Turn>(`/v1/conversations/${id}/cells`, {
        method: 'POST',
        json: { code: "raise ValueError('E' * 300_000)" },
      }),
    );
    const error = failed.execution?.error;
    expect(error?.name).toBe('ValueError');
    expect(Buffer.byteLength(JSON.stringify(error))).toBeLessThan(limits.output + 1024);
    expect(error?.traceback[error.traceback.length - 1]).toMatch(CUT);
    await readBack(api, id);
  });

  it('keeps a conversation under its bound: the oldest outputs go first (with their images), then the oldest turns', async () => {
    const { id } = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const figure = codeStep(await runCell(api, id, 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()'));
    const image = figure.results.flatMap((result) => result.images ?? [])[0];
    expect((await api(image!.url)).status).toBe(200);
    // Each cell's output is within its own bound; together they pass the conversation's.
    for (let index = 0; index < 12; index++) await runCell(api, id, `print('${letter(index)}' * 60_000)`);
    let { conversation, bytes } = await readBack(api, id);
    expect(bytes).toBeLessThan(limits.history + 4 * KiB);
    const steps = conversation.turns.map(codeStep);
    expect(steps[0]?.stdout).toMatch(DROPPED); // the figure's output went first…
    expect(steps[0]?.results).toEqual([]);
    expect((await api(image!.url)).status).toBe(404); // …and its image with it
    expect(steps[1]?.stdout).toMatch(DROPPED);
    expect(steps[12]?.stdout).toBe(`${letter(11).repeat(60_000)}\n`); // the newest is whole
    expect(conversation.turns.map((turn) => turn.input)).toEqual([
      expect.stringContaining('plt.plot'),
      ...Array.from({ length: 12 }, (_, index) => `print('${letter(index)}' * 60_000)`),
    ]); // every question and piece of code stays
    expect(conversation.droppedTurns).toBeUndefined();

    // Code itself large: once no output is left to drop, the oldest turns go whole.
    for (let index = 0; index < 6; index++) await runCell(api, id, big(index));
    ({ conversation, bytes } = await readBack(api, id));
    expect(bytes).toBeLessThan(limits.history + 4 * KiB);
    expect(conversation.droppedTurns).toBeGreaterThan(0);
    expect(conversation.turnCount).toBe(conversation.turns.length);
    expect(conversation.turns[conversation.turns.length - 1]?.input).toBe(big(5));
    const after = await runCell(api, id, 'x5 + 41');
    expect(codeStep(after).results[0]?.data['text/plain']).toBe('42');
  });

  it("keeps a key's conversations under the key's bound: the least recently used lose their oldest outputs first", async () => {
    const other = client(server, 'other-key-0123456789');
    const older = await other.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const newer = await other.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    for (let index = 0; index < 7; index++) await runCell(other, older.id, `print('${index}' * 60_000)`);
    for (let index = 0; index < 7; index++) await runCell(other, newer.id, `print('${index}' * 60_000)`);
    const olderBack = await readBack(other, older.id);
    const newerBack = await readBack(other, newer.id);
    expect(olderBack.bytes + newerBack.bytes).toBeLessThan(limits.key + 8 * KiB);
    expect(codeStep(olderBack.conversation.turns[0]!).stdout).toMatch(DROPPED);
    expect(newerBack.conversation.turns.map((turn) => codeStep(turn).stdout)).toEqual(
      Array.from({ length: 7 }, (_, index) => `${String(index).repeat(60_000)}\n`),
    );
    // The first key's conversations were not touched by the second key's.
    const mine = await api.json<{ conversations: { id: string }[] }>('/v1/conversations');
    expect(mine.conversations.length).toBe(2);
  });
});

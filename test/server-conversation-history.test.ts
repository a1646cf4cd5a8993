/**
 * What a conversation keeps is bounded, over real HTTP on real sandboxes: each
 * step's output is cut with a note, a conversation's history and a key's
 * conversations stay under their bounds (oldest outputs first, then oldest
 * turns), and the history and its notebook export always answer 200 with valid
 * JSON while the conversation keeps working.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodeStep, Conversation, ConversationEvent, Turn } from '../src/protocol/index.js';
import { applyConversationEvent } from '../src/protocol/index.js';
import { type Client, client, startTestServer } from './server-helpers.js';

type Server = Awaited<ReturnType<typeof startTestServer>>;
type Json = Record<string, unknown>;
const KiB = 1024;
const MiB = 1024 * KiB;
const CUT =
  /\[output cut: this conversation keeps the first [\d.]+ [KM]iB of each step's output; the rest was not kept\]/;
const DROPPED =
  /^\[output dropped: this conversation keeps [\d.]+ [KM]iB of history, and its oldest outputs go first\]\n$/;

function codeStep(turn: Turn): CodeStep {
  const step = turn.steps[0];
  if (step?.type !== 'code') throw new Error(`turn ${turn.id} has no code step`);
  return step;
}

const multiline = (value: unknown): boolean =>
  typeof value === 'string' || (Array.isArray(value) && value.every((line) => typeof line === 'string'));

/** The parts of the nbformat 4.5 schema a notebook reader relies on. */
function expectValidNotebook(notebook: Json): void {
  expect([notebook.nbformat, notebook.nbformat_minor]).toEqual([4, 5]);
  expect(typeof notebook.metadata).toBe('object');
  const cells = notebook.cells as Json[];
  expect(new Set(cells.map((cell) => cell.id)).size).toBe(cells.length);
  for (const cell of cells) {
    expect(cell.id).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(multiline(cell.source), JSON.stringify(cell).slice(0, 200)).toBe(true);
    expect(typeof cell.metadata).toBe('object');
    if (cell.cell_type === 'markdown') continue;
    expect(cell.cell_type).toBe('code');
    expect(cell.execution_count === null || Number.isInteger(cell.execution_count)).toBe(true);
    for (const output of cell.outputs as Json[]) {
      switch (output.output_type) {
        case 'stream':
          expect(['stdout', 'stderr']).toContain(output.name);
          expect(multiline(output.text)).toBe(true);
          break;
        case 'execute_result':
        case 'display_data':
          if (output.output_type === 'execute_result') {
            expect(output.execution_count === null || Number.isInteger(output.execution_count)).toBe(true);
          }
          expect(typeof output.metadata).toBe('object');
          for (const [mimeType, value] of Object.entries(output.data as Json)) {
            if (!mimeType.endsWith('json')) expect(multiline(value), mimeType).toBe(true);
          }
          break;
        case 'error':
          expect(typeof output.ename).toBe('string');
          expect(typeof output.evalue).toBe('string');
          expect((output.traceback as unknown[]).every((line) => typeof line === 'string')).toBe(true);
          break;
        default:
          throw new Error(`not an nbformat output: ${String(output.output_type)}`);
      }
    }
  }
}

/** GET the history and the export: both 200 with JSON; returns the history and its size on the wire. */
async function readBack(
  api: Client,
  id: string,
): Promise<{ conversation: Conversation; bytes: number; notebook: Json }> {
  const response = await api(`/v1/conversations/${id}`);
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(200);
  const exported = await api(`/v1/conversations/${id}/notebook`);
  const notebookText = await exported.text();
  expect(exported.status, notebookText.slice(0, 300)).toBe(200);
  const notebook = JSON.parse(notebookText) as Json;
  expectValidNotebook(notebook);
  return { conversation: JSON.parse(text) as Conversation, bytes: Buffer.byteLength(text), notebook };
}

async function runCell(api: Client, id: string, code: string): Promise<Turn> {
  const turn = await api.json<Turn>(`/v1/conversations/${id}/cells`, { method: 'POST', json: { code } });
  expect(turn.status).toBe('done');
  return turn;
}

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

describe('with small bounds', () => {
  let server: Server;
  let api: Client;
  const limits = { output: 64 * KiB, history: 512 * KiB, key: 768 * KiB };
  beforeAll(async () => {
    server = await startTestServer({
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
    const letter = (index: number) => String.fromCharCode(65 + index);
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
    const big = (index: number) => `x${index} = 1  # ${'c'.repeat(100 * KiB)}`;
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

/** Reading conversations as a client does, for the conversation suites: their Server-Sent Events, history and export. */
import { expect } from 'vitest';
import type { CodeStep, Conversation, ConversationEvent, Turn } from '../../src/protocol/index.js';
import { applyConversationEvent } from '../../src/protocol/index.js';
import type { Client } from './server.js';

/** Reads an SSE response into its events (checking `event:` matches the JSON's type). */
export async function readEvents(response: Response): Promise<ConversationEvent[]> {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const type = /^event: (.+)$/m.exec(block)?.[1];
      const data = /^data: (.+)$/m.exec(block)?.[1];
      const event = JSON.parse(data ?? 'null') as ConversationEvent;
      expect(event.type).toBe(type);
      return event;
    });
}

export function sse(api: Client, route: string, json: unknown): Promise<Response> {
  return api(route, { method: 'POST', json, headers: { accept: 'text/event-stream' } });
}

/** Folds events as a client would; the result must equal the server's final turn. */
export function fold(events: ConversationEvent[]): Turn {
  const [first, ...rest] = events;
  if (first?.type !== 'turn-start') throw new Error(`the stream began with ${first?.type}`);
  return rest.reduce(applyConversationEvent, first.turn);
}

export function lastTurn(events: ConversationEvent[]): Turn {
  const last = events[events.length - 1];
  if (last?.type !== 'turn-end') throw new Error(`the stream ended with ${last?.type}`);
  return last.turn;
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

type Json = Record<string, unknown>;

export function codeStep(turn: Turn): CodeStep {
  const step = turn.steps[0];
  if (step?.type !== 'code') throw new Error(`turn ${turn.id} has no code step`);
  return step;
}

const multiline = (value: unknown): boolean =>
  typeof value === 'string' || (Array.isArray(value) && value.every((line) => typeof line === 'string'));

/** The parts of the nbformat 4.5 schema a notebook reader relies on. */
export function expectValidNotebook(notebook: Json): void {
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
export async function readBack(
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

export async function runCell(api: Client, id: string, code: string): Promise<Turn> {
  const turn = await api.json<Turn>(`/v1/conversations/${id}/cells`, { method: 'POST', json: { code } });
  expect(turn.status).toBe('done');
  return turn;
}

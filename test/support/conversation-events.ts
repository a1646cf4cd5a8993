/** Reading a conversation's Server-Sent Events as a client does, for the conversation suites. */
import { expect } from 'vitest';
import type { ConversationEvent, Turn } from '../../src/protocol/index.js';
import { applyConversationEvent } from '../../src/protocol/index.js';
import type { Client } from '../server-helpers.js';

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

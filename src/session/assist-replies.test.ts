/**
 * The host's reading of complete and inspect replies (untrusted: shapes
 * checked, sizes bounded) and its checks on what a caller asks, on the
 * scripted backend. What real kernels answer is in test/contract/assist-contract.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { InvalidInputError } from '../errors.js';
import {
  ASSIST_METADATA_CHARS,
  COMPLETION_MATCH_CHARS,
  COMPLETION_MATCH_LIMIT,
  INSPECTION_DATA_CHARS,
  withinCode,
} from './assist-replies.js';
import { parseReplyBody } from './kernel-protocol.js';
import { Session } from './session.js';

describe('complete replies', () => {
  it('keeps string matches within the bounds and the span the kernel gave', () => {
    expect(
      parseReplyBody('complete', { matches: ['path', 7, 'pardir'], cursorStart: 3, cursorEnd: 5, metadata: { a: 1 } }),
    ).toEqual({ matches: ['path', 'pardir'], cursorStart: 3, cursorEnd: 5, metadata: { a: 1 } });
    const flood = Array.from({ length: COMPLETION_MATCH_LIMIT + 50 }, (_, index) => `name${index}`);
    const long = 'x'.repeat(COMPLETION_MATCH_CHARS + 1);
    const bounded = parseReplyBody('complete', { matches: [long, ...flood], cursorStart: 0, cursorEnd: 0 });
    expect(bounded).toMatchObject({ cursorStart: 0, cursorEnd: 0, metadata: {} });
    expect('matches' in bounded && bounded.matches).toEqual(flood.slice(0, COMPLETION_MATCH_LIMIT));
    const heavy = { note: 'y'.repeat(ASSIST_METADATA_CHARS) };
    expect(parseReplyBody('complete', { matches: [], cursorStart: 0, cursorEnd: 0, metadata: heavy })).toMatchObject({
      metadata: {},
    });
  });

  it('refuses a reply without matches or whose cursors are not a span in the code', () => {
    expect(parseReplyBody('complete', { cursorStart: 0, cursorEnd: 0 })).toHaveProperty('invalid');
    for (const [cursorStart, cursorEnd] of [
      [4, 2],
      [-1, 2],
      [0.5, 1],
      ['0', 1],
    ]) {
      expect(parseReplyBody('complete', { matches: [], cursorStart, cursorEnd })).toHaveProperty('invalid');
    }
    const reply = { matches: ['a'], cursorStart: 0, cursorEnd: 3, metadata: {} };
    expect(withinCode('x😀y', reply)).toBe(true);
    expect(withinCode('x😀', reply)).toBe(false);
  });
});

describe('inspect replies', () => {
  it('keeps string MIME data within the bound, text/plain first', () => {
    expect(
      parseReplyBody('inspect', { found: true, data: { 'text/html': '<b>f</b>', 'text/plain': 'f()', x: 3 } }),
    ).toEqual({ found: true, data: { 'text/plain': 'f()', 'text/html': '<b>f</b>' }, metadata: {} });
    const huge = 'z'.repeat(INSPECTION_DATA_CHARS);
    const bounded = parseReplyBody('inspect', { found: true, data: { 'text/html': huge, 'text/plain': `${huge}!` } });
    expect(bounded).toEqual({ found: true, data: { 'text/plain': huge }, metadata: {} });
    expect(parseReplyBody('inspect', { found: false, data: { 'text/plain': 'ignored' } })).toEqual({
      found: false,
      data: {},
      metadata: {},
    });
  });

  it('refuses a reply without `found`, or found without text/plain', () => {
    expect(parseReplyBody('inspect', { data: {} })).toHaveProperty('invalid');
    expect(parseReplyBody('inspect', { found: true, data: { 'text/html': 'x' } })).toHaveProperty('invalid');
  });
});

describe('session.complete and session.inspect input', () => {
  let session: Session | undefined;
  afterEach(async () => {
    await session?.close();
  });

  it('refuses a cursor outside the code (in code points), code that is not a string, or a bad detail level', async () => {
    session = await Session.create({ backend: createScriptedBackend(), maxCodeBytes: 64 });
    const refused = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(InvalidInputError);
    await refused(session.complete('x😀', 3));
    await refused(session.complete('abc', -1));
    await refused(session.complete('abc', 1.5));
    await refused(session.complete(42 as unknown as string, 0));
    await refused(session.complete('x'.repeat(65), 0));
    await refused(session.inspect('abc', 1, { detailLevel: 2 as 0 }));
    await refused(session.inspect('abc', 1, { language: 'cobol' as 'python' }));
  });
});

describe('session.complete and session.inspect on the scripted backend', () => {
  let session: Session | undefined;
  afterEach(async () => {
    await session?.close();
  });

  it("answers from the script's state, in a context made on first use", async () => {
    const backend = createScriptedBackend({
      execute: ({ state }) => {
        state.set('alpha_one', 1);
        state.set('alpha_two', 2);
        return [];
      },
    });
    session = await Session.create({ backend });
    await session.run('define', { language: 'r' });
    expect(await session.complete('x + alpha_', 10, { language: 'r' })).toEqual({
      matches: ['alpha_one', 'alpha_two'],
      cursorStart: 4,
      cursorEnd: 10,
      metadata: {},
    });
    expect(await session.inspect('alpha_two', 3, { context: 'r' })).toMatchObject({
      found: true,
      data: { 'text/plain': '2' },
    });
    expect((await session.complete('alpha_', 6, { language: 'bash' })).matches).toEqual([]);
    expect(session.listContexts().map((context) => context.id)).toEqual(['python', 'r', 'bash']);
  });
});

/**
 * Questions to a kernel about code (session-assist.ts) on the scripted backend: which context
 * answers, made on first use (and not kept when its kernel cannot start), and refusals once the
 * session is closed. How replies are read is assist-replies.test.ts; what real kernels answer,
 * test/contract/assist-contract.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { LanguageUnavailableError, SessionClosedError } from '../errors.js';
import { Session } from './session.js';

let session: Session | undefined;
afterEach(async () => {
  await session?.close();
  session = undefined;
});

const contextIds = (target: Session) => target.listContexts().map((context) => context.id);

describe('questions to a kernel about code', () => {
  it("asks python when no context is named, and a language's default context, made on first use, when one is", async () => {
    session = await Session.create({ backend: createScriptedBackend() });
    expect(await session.checkComplete('for x in y:')).toEqual({ status: 'incomplete', indent: 4 });
    expect(contextIds(session)).toEqual(['python']);
    expect(await session.checkComplete('ls', { language: 'bash' })).toEqual({ status: 'complete', indent: 0 });
    expect(contextIds(session)).toEqual(['python', 'bash']);
    expect(await session.checkComplete('if x:', { context: 'bash' })).toEqual({ status: 'incomplete', indent: 4 });
  });

  it('refuses a language the sandbox lacks and lists no context for it', async () => {
    session = await Session.create({ backend: createScriptedBackend({ languages: { python: '3.11', bash: '5.2' } }) });
    await expect(session.checkComplete('x', { language: 'r' })).rejects.toBeInstanceOf(LanguageUnavailableError);
    await expect(session.complete('x', 1, { language: 'r' })).rejects.toBeInstanceOf(LanguageUnavailableError);
    await expect(session.inspect('x', 1, { language: 'r' })).rejects.toBeInstanceOf(LanguageUnavailableError);
    expect(contextIds(session)).toEqual(['python']);
  });

  it('refuses every question once the session is closed', async () => {
    session = await Session.create({ backend: createScriptedBackend() });
    await session.close();
    await expect(session.checkComplete('x')).rejects.toBeInstanceOf(SessionClosedError);
    await expect(session.checkComplete('x', { language: 'python' })).rejects.toBeInstanceOf(SessionClosedError);
    await expect(session.complete('x', 1)).rejects.toBeInstanceOf(SessionClosedError);
    await expect(session.inspect('x', 1)).rejects.toBeInstanceOf(SessionClosedError);
  });
});

/**
 * Contexts in a real sandbox, for each language of CONTRACT_LANGUAGES:
 * separate state and counters, restart and removal, and a kernel's stuck code
 * or death costing only its own context. Part of the backend contract.
 */
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { UnknownContextError } from '../../src/errors.js';
import type { Session } from '../../src/session/session.js';
import { withSession } from './contract-support.js';
import { CONTRACT_LANGUAGES, type LanguageSnippets } from './languages.js';

/** Whether process `pid` of the sandbox is still there, seen from the python context. */
async function sandboxProcessExists(session: Session, pid: number): Promise<boolean> {
  const seen = await session.run(
    `import os\ntry:\n    state = open("/proc/${pid}/stat").read().rsplit(")", 1)[1].split()[0]\n    print(state != "Z")\nexcept OSError:\n    print(False)`,
  );
  return seen.stdout.trim() === 'True';
}

async function printed(session: Session, code: string, context: string): Promise<string> {
  const execution = await session.run(code, { context });
  expect(execution.error, `${code} in ${context}`).toBeUndefined();
  return execution.stdout.trim();
}

function casesFor(backend: SandboxBackend, snippets: LanguageSnippets): void {
  const { language } = snippets;

  it(`${language}: two contexts keep their own variables and execution counts`, async () => {
    await withSession(backend, {}, async (session) => {
      const first = await session.createContext({ language });
      const second = await session.createContext({ language });
      expect(first).toMatchObject({ language, cwd: '/mnt/data', executionCount: 0 });
      await session.run(snippets.assign('shared_name', 1), { context: first.id });
      await session.run(snippets.assign('shared_name', 2), { context: second.id });
      await session.run(snippets.assign('only_second', 3), { context: second.id });
      expect(await printed(session, snippets.print('shared_name'), first.id)).toBe('1');
      expect(await printed(session, snippets.print('shared_name'), second.id)).toBe('2');
      const counts = Object.fromEntries(session.listContexts().map((context) => [context.id, context.executionCount]));
      expect(counts[first.id]).toBe(2);
      expect(counts[second.id]).toBe(3);
      const missing = await session.run(snippets.print('only_second'), { context: first.id });
      expect(missing.stdout.trim()).not.toBe('3');
    });
  });

  it(`${language}: restartContext loses only its state; removeContext ends its kernel`, async () => {
    await withSession(backend, {}, async (session) => {
      const kept = await session.createContext({ language });
      const restarted = await session.createContext({ language });
      await session.run(snippets.assign('value', 7), { context: kept.id });
      await session.run(snippets.assign('value', 8), { context: restarted.id });
      expect(await session.restartContext(restarted.id)).toMatchObject({ id: restarted.id, executionCount: 0 });
      expect((await session.run(snippets.print('value'), { context: restarted.id })).stdout.trim()).not.toBe('8');
      expect(await printed(session, snippets.print('value'), kept.id)).toBe('7');

      const pid = Number(await printed(session, snippets.printPid, kept.id));
      expect(await sandboxProcessExists(session, pid)).toBe(true);
      await session.removeContext(kept.id);
      expect(await sandboxProcessExists(session, pid)).toBe(false);
      await expect(session.run(snippets.print('value'), { context: kept.id })).rejects.toBeInstanceOf(
        UnknownContextError,
      );
      expect(session.listContexts().map((context) => context.id)).toEqual(['python', restarted.id]);
    });
  });

  it(`${language}: code that ignores the interrupt costs only its own context's state`, async () => {
    await withSession(backend, { interruptGraceMs: 500 }, async (session) => {
      const stuck = await session.createContext({ language });
      const other = await session.createContext({ language });
      await session.run('kept_in_python = "yes"');
      await session.run(snippets.assign('value', 5), { context: other.id });
      await session.run(snippets.assign('value', 6), { context: stuck.id });
      const execution = await session.run(snippets.ignoreInterrupt, { context: stuck.id, timeoutMs: 500 });
      expect(execution.status).toBe('timeout');
      expect(execution.stateLost).toBe(true);
      expect(execution.stateLostReason).toMatch(
        /did not stop when interrupted, so the kernel was killed and restarted/,
      );
      expect((await session.run(snippets.print('value'), { context: stuck.id })).stdout.trim()).not.toBe('6');
      expect(await printed(session, snippets.print('value'), other.id)).toBe('5');
      expect(await printed(session, 'print(kept_in_python)', 'python')).toBe('yes');
    });
  });

  it(`${language}: a kernel killed under its run ends it with the state lost; the others keep theirs`, async () => {
    await withSession(backend, {}, async (session) => {
      const dying = await session.createContext({ language });
      await session.run('kept_in_python = "yes"');
      await session.run(snippets.assign('value', 9), { context: dying.id });
      const execution = await session.run(snippets.killSelf, { context: dying.id });
      expect(execution.status).toBe('error');
      expect(execution.error?.name).toBe('KernelDied');
      expect(execution.error?.value).toMatch(/^The kernel died \(killed by SIGKILL\)\./);
      expect(execution.stateLost).toBe(true);
      const after = await session.run(snippets.print('value'), { context: dying.id });
      expect(after.stdout.trim()).not.toBe('9');
      expect(await printed(session, 'print(kept_in_python)', 'python')).toBe('yes');
    });
  });
}

/** The context cases of the backend contract, for every language of CONTRACT_LANGUAGES. */
export function contextCases(backend: SandboxBackend): void {
  for (const snippets of CONTRACT_LANGUAGES) casesFor(backend, snippets);

  it('a default context is made on first use of its language, and a run in it says where it ran', async () => {
    await withSession(backend, {}, async (session) => {
      for (const { language, printPid } of CONTRACT_LANGUAGES) {
        const execution = await session.run(printPid, { language });
        expect(execution).toMatchObject({ status: 'ok', context: language, language });
      }
      expect(session.listContexts().map((context) => context.id)).toEqual([
        ...new Set(['python', ...CONTRACT_LANGUAGES.map((snippets) => snippets.language)]),
      ]);
    });
  });
}

/**
 * The security probes in each language of CONTRACT_LANGUAGES, run in a
 * context of that language (its own APIs, not a shell): host files, writes
 * outside /mnt/data and /tmp, the network, a memory hog, an endless sleep.
 * Each starts with a harmless canary in the same context, so a context that
 * never ran cannot pass as "blocked". Part of the security contract.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import type { SessionOptions } from '../../src/session/options.js';
import type { Session } from '../../src/session/session.js';
import { connectionsDuring, withHostSecret } from '../support/host-bait.js';
import { withSession } from './contract-support.js';
import { CONTRACT_LANGUAGES, type LanguageSnippets } from './languages.js';

/** A context of the language that has shown it runs code: the canary. */
async function canaryContext(session: Session, snippets: LanguageSnippets): Promise<string> {
  const { id } = await session.createContext({ language: snippets.language });
  const value = Number.parseInt(randomBytes(3).toString('hex'), 16);
  await session.run(snippets.assign('canary', value), { context: id });
  const shown = await session.run(snippets.print('canary'), { context: id });
  expect(shown.stdout.trim()).toBe(String(value));
  return id;
}

async function inLanguage(
  backend: SandboxBackend,
  snippets: LanguageSnippets,
  options: SessionOptions,
  body: (session: Session, context: string) => Promise<void>,
): Promise<void> {
  await withSession(backend, options, async (session) => body(session, await canaryContext(session, snippets)));
}

function casesFor(backend: SandboxBackend, snippets: LanguageSnippets): void {
  const { language } = snippets;

  it(`${language}: cannot read host secrets, nor write outside /mnt/data and /tmp`, async () => {
    await withHostSecret(async ({ file: secretFile }) => {
      await inLanguage(backend, snippets, {}, async (session, context) => {
        const attempt = async (code: string) => (await session.run(code, { context, timeoutMs: 20_000 })).stdout.trim();
        for (const target of ['/etc/shadow', secretFile, '/root/.bashrc']) {
          expect(await attempt(snippets.tryRead(target)), target).toBe('blocked');
        }
        const marker = `sandcell-pwned-${randomBytes(4).toString('hex')}`;
        for (const directory of ['/', '/etc', '/usr', '/opt/sandcell', '/home', '/proc']) {
          expect(await attempt(snippets.tryWrite(path.posix.join(directory, marker))), directory).toBe('blocked');
        }
        for (const directory of ['/mnt/data', '/tmp']) {
          expect(await attempt(snippets.tryWrite(path.posix.join(directory, marker))), directory).toBe('WROTE');
        }
      });
    });
  });

  it(`${language}: has no network, not even the host's loopback`, async () => {
    const connections = await connectionsDuring(async (port) => {
      await inLanguage(backend, snippets, {}, async (session, context) => {
        for (const [host, target] of [
          ['1.1.1.1', 53],
          ['169.254.169.254', 80],
          ['127.0.0.1', port],
        ] as const) {
          const tried = await session.run(snippets.tryConnect(host, target), { context, timeoutMs: 20_000 });
          expect(tried.stdout.trim(), `${host}:${target}`).toBe('blocked');
        }
      });
    });
    expect(connections).toBe(0);
  });

  it(`${language}: a memory hog is stopped within the memory limit, and the session goes on`, async () => {
    await inLanguage(backend, snippets, { limits: { memoryBytes: 256 * 1024 * 1024 } }, async (session, context) => {
      await session.run('kept_in_python = "yes"');
      const hog = await session.run(snippets.hogMemory, { context, timeoutMs: 30_000 });
      expect(hog.status).toBe('error');
      expect((await session.run('print(kept_in_python)')).stdout).toBe('yes\n');
      await canaryContext(session, snippets);
    });
  });

  it(`${language}: an endless sleep stops at the timeout`, async () => {
    await inLanguage(backend, snippets, {}, async (session, context) => {
      const execution = await session.run(snippets.sleepLong, { context, timeoutMs: 800 });
      expect(execution.status).toBe('timeout');
      const after = await session.run(snippets.print('canary'), { context });
      expect(after.status).toBe('ok');
    });
  });
}

export function languageSecurityCases(backend: SandboxBackend): void {
  for (const snippets of CONTRACT_LANGUAGES) casesFor(backend, snippets);
}

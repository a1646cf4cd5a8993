/**
 * The harmless run each security case makes first in its session, so a sandbox that failed to
 * start cannot pass as "blocked".
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import type { Execution } from '../../src/session/execution.js';
import type { SessionOptions } from '../../src/session/options.js';
import type { Session } from '../../src/session/session.js';
import { withSession } from './contract-support.js';

export async function canary(session: Session): Promise<void> {
  const token = randomBytes(6).toString('hex');
  const execution = await session.run(`print("canary-${token}")`);
  expect(execution.status).toBe('ok');
  expect(execution.stdout).toBe(`canary-${token}\n`);
}

/** Runs `code` after the canary; the code prints one line per attempt. */
export async function attempt(backend: SandboxBackend, code: string, options: SessionOptions = {}): Promise<Execution> {
  return withSession(backend, options, async (session) => {
    await canary(session);
    return session.run(code, { timeoutMs: 20_000 });
  });
}

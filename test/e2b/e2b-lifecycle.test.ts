/**
 * E2B's control plane driven by the unmodified SDKs (`e2b` 2.51 and 2.49,
 * whose create paths differ, and `@e2b/code-interpreter` 2.8.0's Sandbox) on
 * real bubblewrap sandboxes: create, info, list, timeouts, connect, kill, and
 * who may do each.
 */
import { Sandbox as InterpreterSandbox } from '@e2b/code-interpreter';
import { Sandbox, SandboxNotFoundError } from 'e2b';
import { Sandbox as Sandbox249 } from 'e2b-2-49';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2bServer, type TestServer } from './e2b-helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startE2bServer();
});
afterAll(async () => {
  await server?.close();
});

describe('E2B lifecycle', () => {
  it('creates a sandbox with e2b 2.51 (POST /v2/sandboxes) and kills it', async () => {
    const sandbox = await Sandbox.create();
    expect(sandbox.sandboxId).toMatch(/^[a-z0-9]{20}$/);
    expect(await sandbox.isRunning()).toBe(true);
    await sandbox.kill();
    expect(await sandbox.isRunning()).toBe(false);
    expect(await Sandbox.kill(sandbox.sandboxId)).toBe(false);
    await expect(Sandbox.getInfo(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  it('creates with e2b 2.49 (POST /sandboxes) and with the code interpreter’s Sandbox', async () => {
    const older = await Sandbox249.create();
    const interpreter = await InterpreterSandbox.create();
    try {
      expect(await older.isRunning()).toBe(true);
      expect(await interpreter.isRunning()).toBe(true);
      expect(older.sandboxId).not.toBe(interpreter.sandboxId);
    } finally {
      await older.kill();
      await interpreter.kill();
    }
    expect(await Sandbox.kill(older.sandboxId)).toBe(false);
  });
});

/**
 * The server's pieces (createRuntime: pool, registry, stores) on the scripted backend, without HTTP:
 * for tests of one of the registry's parts through the registry that composes it, as the doors use
 * it. The kernel answers `namesKernel` (`x = 1` binds, `x` shows it, `sleep N` waits N ms).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { createScriptedBackend, type ScriptedRunContext } from '../../src/backends/scripted/index.js';
import type { Owner } from '../../src/server/core/auth.js';
import type { ServerContext } from '../../src/server/core/context.js';
import type { ManagedSession } from '../../src/server/core/managed-session.js';
import { resolveServerOptions } from '../../src/server/core/options.js';
import type { SessionRegistry } from '../../src/server/core/registry.js';
import { createRuntime } from '../../src/server/core/runtime.js';
import type { ServerOptions } from '../../src/server/index.js';
import { namesKernel } from './kernel-script.js';
import { LogCapture } from './server.js';

export const ALICE: Owner = { id: 'key-alice', label: 'alice' };
export const BOB: Owner = { id: 'key-bob', label: 'bob' };

function kernel(context: ScriptedRunContext) {
  const sleep = /^sleep (\d+)$/.exec(context.code);
  return sleep ? [{ type: 'sleep' as const, ms: Number(sleep[1]) }] : namesKernel(context);
}

export type ScriptedRuntime = ServerContext & { logs: LogCapture; stateDirectory: string };

/**
 * Runtimes made by `scriptedRuntime()` in a file, each shut down after its test; `durable` ones keep
 * paused sessions in a state directory of the file's, which a later runtime of the same test may share.
 */
export function useScriptedRuntimes() {
  const made: ScriptedRuntime[] = [];
  const directories: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((runtime) => runtime.registry.shutdown(0)));
  });
  afterAll(async () => {
    await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
  });
  return {
    async stateDirectory(): Promise<string> {
      const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-registry-'));
      directories.push(directory);
      return directory;
    },
    scriptedRuntime(options: ServerOptions = {}): ScriptedRuntime {
      const logs = new LogCapture();
      const runtime = createRuntime(
        resolveServerOptions(
          {
            poolSize: 0,
            preloadModules: [],
            logDestination: logs,
            backend: createScriptedBackend({ execute: kernel }),
            ...options,
          },
          {},
        ),
      );
      const withLogs = Object.assign(runtime, {
        logs,
        stateDirectory: typeof options.stateDirectory === 'string' ? options.stateDirectory : '',
      });
      made.push(withLogs);
      return withLogs;
    },
  };
}

/** What the session shows for `name` now (its value, or the error's name). */
export async function shown(registry: SessionRegistry, entry: ManagedSession, name: string) {
  const execution = await registry.execute(entry, name);
  return execution.error?.name ?? execution.results[0]?.data['text/plain'];
}

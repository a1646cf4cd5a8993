/**
 * Which backends can run here. A backend that cannot is reported as skipped
 * with the reason — unless SANDCELL_REQUIRE_BACKENDS names it (CI does), in
 * which case its tests fail with that reason instead of passing silently.
 */
import { describe, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';

export function requiredBackends(): string[] {
  return (process.env.SANDCELL_REQUIRE_BACKENDS ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
}

/** Undefined when the backend can run; else why not. */
export async function unavailableReason(backend: SandboxBackend): Promise<string | undefined> {
  try {
    await backend.ensureAvailable();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * `describe` when `reason` is undefined. Otherwise a skipped suite whose name
 * carries the reason, or — when the backend is required — a failing test.
 */
export function describeWhenAvailable(name: string, backendName: string, reason: string | undefined, body: () => void) {
  if (reason === undefined) {
    describe(name, body);
    return;
  }
  if (requiredBackends().includes(backendName)) {
    describe(name, () => {
      it(`${backendName} is required here (SANDCELL_REQUIRE_BACKENDS) and must be available`, () => {
        throw new Error(`${backendName} is unavailable: ${reason}`);
      });
    });
    return;
  }
  process.stderr.write(`[skipped] ${name}: ${backendName} is unavailable here — ${reason}\n`);
  describe.skip(`${name} — skipped: ${backendName} unavailable (${reason})`, body);
}

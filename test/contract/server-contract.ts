/**
 * Server scenarios that hold whatever runs the sandboxes, written once and run per backend:
 * on the scripted backend by src/server/server-contract.test.ts, on bubblewrap by
 * test/server-contract.test.ts. A scenario whose subject is real code (Python, a shell, the gate)
 * belongs to the real suites; one whose subject is the server's own logic and that a real
 * sandbox must pass the same way belongs here, instead of a scripted copy and a real copy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SandcellServer, ServerOptions } from '../../src/server/index.js';
import { startTestServer } from '../support/server.js';
import type { ContractOptions } from './contract-support.js';

const KEY = 'server-contract-key-0001';

export function runServerContract({ name, createBackend }: ContractOptions): void {
  describe(`server contract: ${name}`, () => {
    let server: SandcellServer | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    /** A server with one key on the backend under test, nothing kept warm. */
    async function start(options: ServerOptions): Promise<SandcellServer> {
      server = await startTestServer({ apiKeys: [KEY], poolSize: 0, ...options, backend: createBackend() });
      return server;
    }

    it("refuses a Jupyter kernel past the key's session limit in Jupyter's error shape, naming the route that frees one", async () => {
      const running = await start({ limits: { maxSessions: 1 } });
      const kernels = (init: RequestInit = {}, route = '') =>
        fetch(`${running.url}/jupyter/api/kernels${route}`, { ...init, headers: { authorization: `token ${KEY}` } });
      const first = await kernels({ method: 'POST' });
      expect(first.status).toBe(201);
      const refused = await kernels({ method: 'POST' });
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as { message: string; reason: string };
      expect(body.reason).toBe('too-many-sessions');
      expect(body.message).toContain('DELETE /api/kernels/{id}');
      expect(body.message).not.toContain('/v1');
      // Deleting the kernel frees its slot.
      const { id } = (await first.json()) as { id: string };
      expect((await kernels({ method: 'DELETE' }, `/${id}`)).status).toBe(204);
      const again = await kernels({ method: 'POST' });
      expect(again.status).toBe(201);
    });
  });
}

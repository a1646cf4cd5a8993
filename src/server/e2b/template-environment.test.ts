/**
 * E2B's templateID chooses the environment, over real HTTP with kernels
 * answering from a script (a scripted backend runs no built environment, so
 * a built one is refused with that reason; on a real sandbox see
 * test/environments-bubblewrap.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { useScriptedServer } from '../../../test/support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const { api } = useScriptedServer(undefined);

const create = (templateID: string) =>
  api('/e2b/sandboxes', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ templateID }),
  });

describe("E2B's templateID", () => {
  it("the SDKs' default templates run in the server's default environment", async () => {
    for (const template of ['base', 'code-interpreter-v1']) {
      const response = await create(template);
      expect(response.status).toBe(201);
      const sandbox = (await response.json()) as Json;
      expect(sandbox.templateID).toBe(template);
      const listed = await api.json<Json>('/v1/sessions');
      expect(listed.sessions.map((session: Json) => session.environment)).toContain('default');
    }
  });

  it('another template names an environment; a malformed one is refused with 400', async () => {
    const built = await create('ml');
    expect(built.status).toBe(503);
    expect(((await built.json()) as Json).message).toMatch(/only bubblewrap, gvisor and docker/);
    const malformed = await create('Not An Environment!');
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as Json).message).toMatch(/neither a default template .* nor an environment name/);
  });
});

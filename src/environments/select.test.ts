import { describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { BackendUnavailableError } from '../errors.js';
import { SessionPool } from '../session/pool.js';
import { createSession } from '../session/session.js';

describe('choosing an environment for a session', () => {
  it('runs the default environment on the backend as configured and says so', async () => {
    const session = await createSession({ backend: createScriptedBackend() });
    try {
      expect(session.environment).toMatchObject({ name: 'default', backend: 'scripted', backendRef: undefined });
    } finally {
      await session.close();
    }
  });

  it('refuses a built environment on a backend that cannot run one, naming the backends that can', async () => {
    const attempt = createSession({ backend: createScriptedBackend(), environmentName: 'ml' });
    await expect(attempt).rejects.toThrow(BackendUnavailableError);
    await expect(createSession({ backend: createScriptedBackend(), environmentName: 'ml' })).rejects.toThrow(
      /only bubblewrap, gvisor and docker/,
    );
  });
});

describe('a pool and environments', () => {
  it('hands out its own environment warm, and starts a session in another on request', async () => {
    const pool = new SessionPool({ size: 1, sessionOptions: { backend: createScriptedBackend() } });
    try {
      await pool.start();
      const warm = await pool.acquire();
      expect(warm.environment.name).toBe('default');
      // The scripted backend runs no built environment: the request reaches Session.create, which says so.
      await expect(pool.acquire({ environment: 'ml' })).rejects.toThrow(/only bubblewrap, gvisor and docker/);
    } finally {
      await pool.close();
    }
  });
});

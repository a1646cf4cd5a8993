import { describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../backends/scripted/index.js';
import { BackendUnavailableError } from '../errors.js';
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
      /only bubblewrap and docker/,
    );
  });
});

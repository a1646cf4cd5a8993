import { describe, expect, it } from 'vitest';
import { envBuildCommand } from './env-command.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';

describe('sandcell env build --allow-host', () => {
  it('refuses a rule a session would refuse, as a usage error, before anything is built', async () => {
    const attempt = envBuildCommand('/nonexistent/sandcell.env.json', {
      allowHost: ['https://example.com/'],
      json: true,
    });
    await expect(attempt).rejects.toBeInstanceOf(CliExit);
    await expect(attempt).rejects.toMatchObject({
      exitCode: EXIT_USAGE,
      message: expect.stringMatching(/^--allow-host: /),
    });
  });
});

describe('sandcell env build DOCKERFILE --allow-host', () => {
  it('is refused: a Dockerfile build has no network, so the flag would promise what it cannot give', async () => {
    const attempt = envBuildCommand('/nonexistent/Dockerfile', {
      backend: 'docker',
      name: 'tools',
      allowHost: ['pypi.org'],
      json: true,
    });
    await expect(attempt).rejects.toMatchObject({ exitCode: EXIT_USAGE, message: expect.stringMatching(/no network/) });
  });
});

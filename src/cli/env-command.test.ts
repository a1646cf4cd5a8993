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

import { describe, expect, it } from 'vitest';
import { CliExit } from './exit-codes.js';
import { buildProgram } from './main.js';
import { networkSessionOptions, serveNetworkOptions } from './network-options.js';
import { serverOptionsFrom } from './serve-command.js';

/** The options commander gives a subcommand's action for `argv`, without running it. */
function parsedOptions(argv: string[]): Record<string, unknown> {
  const program = buildProgram(() => undefined);
  let seen: Record<string, unknown> = {};
  const name = argv[0] as string;
  const command = program.commands.find((candidate) => candidate.name() === name);
  command?.action((...args: unknown[]) => {
    seen = (args.at(-2) ?? {}) as Record<string, unknown>;
  });
  program.parse(['node', 'sandcell', ...argv]);
  return seen;
}

describe('--allow-host', () => {
  it('is on run, repl, exec, chat, ask and discord, repeatable or comma-separated, and makes the allow-list', () => {
    for (const command of ['run', 'repl', 'exec', 'chat', 'ask', 'discord']) {
      const extra = command === 'exec' ? ['--', 'true'] : command === 'ask' ? ['a question'] : ['-'];
      const argv = [command, '--allow-host', 'pypi.org,files.pythonhosted.org', '--allow-host', 'Example.com'];
      const options = parsedOptions(['repl', 'chat', 'discord'].includes(command) ? argv : [...argv, ...extra]);
      expect(networkSessionOptions(options), command).toEqual({
        network: { allow: ['pypi.org', 'files.pythonhosted.org', 'example.com'] },
      });
    }
  });

  it('gives no network without the flag, and a usage error for a bad host', () => {
    expect(networkSessionOptions({})).toEqual({});
    expect(() => networkSessionOptions({ allowHost: ['https://pypi.org/'] })).toThrow(CliExit);
  });

  it("on serve: --allow-host is the sessions' default and permitted, --permit-host widens what keys may ask for", () => {
    expect(serveNetworkOptions({})).toEqual({});
    expect(serveNetworkOptions({ allowHost: ['pypi.org'], permitHost: ['example.com'] })).toEqual({
      networkPermission: ['pypi.org', 'example.com'],
      network: { allow: ['pypi.org'] },
    });
    expect(serveNetworkOptions({ permitHost: ['any'] })).toEqual({ networkPermission: 'any' });
    const server = serverOptionsFrom({ apiKey: [], allowedHost: [], allowHost: ['pypi.org'] });
    expect(server.sessionOptions?.network).toEqual({ allow: ['pypi.org'] });
    expect(server.networkPermission).toEqual(['pypi.org']);
  });
});

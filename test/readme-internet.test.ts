/**
 * docs/internet-access.md's blocks, run as written: each line's comment is what the reader is
 * told curl says, and here it must say it (and sandcell exit with curl's code). The pip block
 * installs from the package index this machine's pip is configured for (test/package-index.test.ts
 * gives the host's pip an index on 127.0.0.1 instead). The secrets block runs as written too; that the
 * gate adds the key over HTTPS is test/network-bubblewrap.test.ts's (a stand-in host on 127.0.0.1).
 */
import { rmSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsOf, readmeBlock, runShell, scratchClone } from './support/readme.js';

let clone: string;
beforeAll(() => {
  clone = scratchClone();
});
afterAll(() => rmSync(clone, { recursive: true, force: true }));

describe('README: Internet access', () => {
  it('an unlisted host is refused by the gate, and going around the proxy fails at once', async () => {
    const block = readmeBlock('internet-access');
    const commands = commandsOf(block.code);
    expect(commands).toHaveLength(2);
    for (const command of commands) {
      const said = command.slice(command.indexOf('#') + 1).trim();
      const exitCode = Number(said.match(/^curl: \((\d+)\)/)?.[1]);
      const result = await runShell(command, { cwd: clone });
      expect(result.code, result.stderr).toBe(exitCode);
      expect(result.stderr).toContain(said);
    }
  });
});

describe('README: pip install from the package index', () => {
  it("installs a package Debian does not ship, from the host pip's index, and imports it in the next cell", async () => {
    const result = await runShell(readmeBlock('internet-access-pip').code, { cwd: clone });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('| hi |');
    expect(result.stdout).toContain('^__^');
  }, 180_000);
});

describe('README: A service on this machine', () => {
  it('host.sandcell.internal reaches it, and a rule on 127.0.0.1 is refused naming that rule', async () => {
    const block = readmeBlock('internet-host');
    const [reach, refused] = commandsOf(block.code);
    // Ollama's port, on this machine's loopback: a stand-in answering as it does (or Ollama itself).
    const ollama = http.createServer((request, response) => {
      response.writeHead(request.url === '/api/version' ? 200 : 404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ version: '0.0.0-stand-in' }));
    });
    const listening = await new Promise<boolean>((resolve) => {
      ollama.once('error', () => resolve(false));
      ollama.listen(11434, '127.0.0.1', () => resolve(true));
    });
    try {
      const result = await runShell(reach as string, { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^\{"version":"/);
    } finally {
      if (listening) ollama.close();
    }
    const said = (refused as string).slice((refused as string).indexOf('#') + 1).trim();
    const result = await runShell(refused as string, { cwd: clone });
    expect(result.code).toBe(2);
    expect(result.stderr.replace(/\s+/g, ' ')).toContain(said);
  });
});

describe('README: Keys that never enter the sandbox', () => {
  it('the secret reaches the gate and not the sandbox', async () => {
    const block = readmeBlock('internet-secrets');
    const said = block.code.slice(block.code.lastIndexOf('#') + 1).trim();
    // The canary: the same check, with the key set inside the sandbox, does see it.
    const canary = await runShell(
      'npx sandcell exec -- sh -c \'export PROBE=sk-example; env | grep -q sk-example && echo "the key is here" || echo "no key in the sandbox"\'',
      { cwd: clone },
    );
    expect(canary.stdout.trim(), canary.stderr).toBe('the key is here');
    const result = await runShell(block.code, { cwd: clone });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(said);
  });
});

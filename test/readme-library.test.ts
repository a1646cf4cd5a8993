/**
 * The library blocks of README.md and docs/ (library, agents, server), run as
 * written (the marker convention is in test/readme.test.ts): the install block packs this checkout and installs the
 * tarball into a fresh project, and each TypeScript example then runs there
 * with Node (they use no type syntax), importing `sandcell` as a user's
 * project would. The MCP configuration is started as a desktop client would.
 */
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from './support/fake-providers.js';
import { runProcess } from './support/process.js';
import { commandsOf, type ReadmeBlock, readmeBlocks, root, runShell } from './support/readme.js';
import { removeStateDirectory } from './support/volumes.js';

const blocks = readmeBlocks();
const project = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-project-'));
const tarball = path.join(root, 'sandcell-0.1.0.tgz');

function block(id: string): ReadmeBlock {
  const found = blocks.find((candidate) => candidate.id === id);
  if (!found) throw new Error(`neither README.md nor docs/ has a block marked readme-test: ${id}`);
  return found;
}

/** The README's placeholders, made real. */
function placed(text: string): string {
  return text.replaceAll('/path/to/sandcell', root).replaceAll('/path/to/your-project', project);
}

/** Runs a ts block as an ES module in the project; what it printed. */
async function runModule(id: string, env: Record<string, string> = {}) {
  const file = path.join(project, `${id}.mjs`);
  writeFileSync(file, block(id).code);
  const result = await runProcess(process.execPath, [file], { cwd: project, env });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

beforeAll(async () => {
  writeFileSync(path.join(project, 'package.json'), '{ "name": "your-project", "private": true }\n');
  // The agents example reads examples/… from where it runs.
  symlinkSync(path.join(root, 'examples'), path.join(project, 'examples'));
  // The install block, line by line: `cd` moves where the next line runs, as in a shell.
  let cwd = root;
  for (const command of commandsOf(placed(block('install').code))) {
    const directory = command.match(/^cd (\S+)$/)?.[1];
    if (directory) {
      cwd = directory;
      continue;
    }
    const result = await runShell(command, { cwd });
    expect(result.code, `${command}\n${result.stderr}`).toBe(0);
  }
}, 300_000);
afterAll(() => {
  rmSync(project, { recursive: true, force: true });
  rmSync(tarball, { force: true });
});

describe('library blocks (README.md, docs/) run as written, in a project that installed the packed tarball', () => {
  it('install: the tarball was packed and installed as a dependency (not a link to the checkout)', () => {
    expect(existsSync(path.join(project, 'node_modules', 'sandcell', 'dist', 'index.js'))).toBe(true);
    expect(existsSync(path.join(project, 'node_modules', 'sandcell', 'src'))).toBe(false);
  });

  it('library: a session reads the CSV it was given', async () => {
    const stdout = await runModule('library');
    expect(stdout).toMatch(/^a\s+4\nb\s+6\ndtype: int64\n$/);
  }, 120_000);

  it('library-pool: a pooled session runs', async () => {
    expect(await runModule('library-pool')).toBe('2\n');
  }, 120_000);

  it('snapshots-library: a checkpoint restored, a fork, a pause and a resume that brings df back', async () => {
    const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-snapshots-'));
    try {
      const stdout = await runModule('snapshots-library', { SANDCELL_STATE_DIR: stateDirectory });
      expect(stdout).toBe('6\npd df\n6\n');
    } finally {
      rmSync(stateDirectory, { recursive: true, force: true });
    }
  }, 120_000);

  it('terminals-library: a shell on a terminal, resized, its exit status', async () => {
    expect(await runModule('terminals-library')).toBe('5 true\n');
  }, 120_000);

  it('volumes-library: a volume keeps a file across sessions, then goes', async () => {
    const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-volumes-'));
    try {
      expect(await runModule('volumes-library', { SANDCELL_STATE_DIR: stateDirectory })).toBe(
        'round 1: cached False\nround 2: cached True\n',
      );
    } finally {
      removeStateDirectory(stateDirectory);
    }
  }, 120_000);

  it('library-testing: the scripted backend answers from its script', async () => {
    expect((await runModule('library-testing')).split('\n').filter(Boolean)).toEqual(['ran 1 + 1', 'KernelDied']);
  });

  it('agents-library: DataChat asks the model about examples/traffic_accidents.csv', async () => {
    const provider = await startFakeOpenAI([{ text: 'Traffic fines.' }]);
    try {
      await runModule('agents-library', { OPENAI_API_KEY: 'sk-readme', OPENAI_BASE_URL: provider.baseURL });
      expect(provider.requests[0]!.body.model).toBe('o4-mini');
      expect(provider.requests[0]!.raw).toContain('traffic_fine_amount');
    } finally {
      await provider.close();
    }
  }, 120_000);

  it('server-library: createServer listens, prints its URL and closes', async () => {
    const lines = (await runModule('server-library')).trim().split('\n');
    // Its own line, and the server's log (JSON lines, pino, written asynchronously: in any order around it).
    const urls = lines.filter((line) => !line.startsWith('{'));
    expect(urls).toHaveLength(1);
    expect(urls[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const messages = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line).msg);
    expect(messages).toContain('stopped');
  }, 120_000);

  it('mcp-config: the configured command is an MCP server whose run_python runs code', async () => {
    const configuration = JSON.parse(placed(block('mcp-config').code)).mcpServers.sandcell;
    const transport = new StdioClientTransport({ ...configuration, stderr: 'pipe' });
    const client = new Client({ name: 'readme-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'run_python', arguments: { code: '6 * 7' } });
      expect(JSON.stringify(result.content)).toContain('42');
    } finally {
      await client.close();
    }
  }, 120_000);
});

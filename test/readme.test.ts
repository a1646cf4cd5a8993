/**
 * README.md and its guides under docs/, run as written: a README or a guide
 * that drifts from the code fails here.
 *
 * The convention: every fenced block in README.md and in docs/*.md (but the
 * design documents, DESIGN_DOCS in test/support/readme.ts) has, on the line
 * just above its opening fence, a marker `<!-- readme-test: ID -->` (GitHub
 * hides it); an ID is used once across all those files.
 * Each ID is either run — a runner in RUNNERS below, or a test file named in
 * RUN_ELSEWHERE (which must name the ID) — or listed in SKIPPED with the
 * reason it cannot run here. A block without a marker, or with an ID that is
 * neither, fails the first test.
 * To add a section: put the marker above each block and a runner here (or in
 * your own test file, named in RUN_ELSEWHERE).
 *
 * Runners run a block's text from the page itself, on real sandboxes, in a
 * scratch directory standing in for the clone's root (`examples/` and
 * `npx sandcell` resolve as in a clone). What they change, and only that: a
 * server the README reaches at localhost:8080 listens on a free port, and a
 * model is a fake OpenAI-compatible server on 127.0.0.1 (OPENAI_BASE_URL, or
 * the block's own base URL, points there).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { createGvisorBackend } from '../src/backends/gvisor/index.js';
import { requiredBackends, unavailableReason } from './support/backends.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { commandsOf, readmeBlock, readmeBlocks, root, runShell, scratchClone } from './support/readme.js';

/** Blocks not run here, and why. */
const SKIPPED: Record<string, string> = {
  setup: 'the set-up itself: CI runs `npm run setup`, and `npm test` is what runs this file',
  'azure-langchain':
    'needs @langchain/azure-dynamic-sessions, not a dependency; test/server-azure.test.ts speaks its protocol',
  'server-image-push': 'needs a container registry; test/container-image.test.ts builds the image it would push',
  'kubernetes-seccomp': "writes into a Kubernetes node's kubelet directory; no node here",
  'kubernetes-secret':
    'needs a Kubernetes API server; test/container-image.test.ts checks that the StatefulSet takes every variable from the Secret sandcell',
};

/** Blocks run by another test file. */
const RUN_ELSEWHERE: Record<string, string> = {
  'internet-secrets': 'test/readme-internet.test.ts',
  'server-image-build': 'test/container-image.test.ts',
  'container-doctor': 'test/container-image.test.ts',
  'container-run': 'test/container-image.test.ts',
  'container-nodes': 'test/container-image.test.ts',
  'kubernetes-apply': 'test/container-image.test.ts',
  environment: 'test/readme-environments.test.ts',
  'environment-python': 'test/readme-environments.test.ts',
  'environment-dockerfile': 'test/readme-environments-docker.test.ts',
  'environment-image': 'test/readme-environments-docker.test.ts',
  install: 'test/readme-library.test.ts',
  library: 'test/readme-library.test.ts',
  'library-pool': 'test/readme-library.test.ts',
  'library-testing': 'test/readme-library.test.ts',
  'agents-library': 'test/readme-library.test.ts',
  'server-library': 'test/readme-library.test.ts',
  'mcp-config': 'test/readme-library.test.ts',
  serve: 'test/readme-servers.test.ts',
  rest: 'test/readme-servers.test.ts',
  'publish-outputs': 'test/readme-servers.test.ts',
  'upload-link': 'test/readme-servers.test.ts',
  'rest-quick': 'test/readme-servers.test.ts',
  conversations: 'test/readme-servers.test.ts',
  'web-ui': 'test/readme-servers.test.ts',
  'state-dir': 'test/readme-state-dir.test.ts',
  'snapshots-library': 'test/readme-library.test.ts',
  'snapshots-serve': 'test/readme-servers.test.ts',
  'snapshots-rest': 'test/readme-servers.test.ts',
  'snapshots-cli': 'test/readme-servers.test.ts',
  'store-s3': 'test/server-shared-store.test.ts',
  'store-azure': 'test/server-shared-store.test.ts',
  'e2b-serve': 'test/readme-e2b.test.ts',
  'e2b-sdk': 'test/readme-e2b.test.ts',
  'ports-e2b': 'test/readme-ports.test.ts',
  'ports-v1': 'test/readme-ports.test.ts',
  'ports-desktop-build': 'test/readme-ports-desktop.test.ts',
  'ports-desktop': 'test/readme-ports-desktop.test.ts',
  'terminals-e2b': 'test/readme-terminals.test.ts',
  'terminals-shell': 'test/readme-terminals.test.ts',
  'terminals-v1': 'test/readme-terminals.test.ts',
  'terminals-library': 'test/readme-library.test.ts',
  'volumes-cli': 'test/readme-volumes.test.ts',
  'volumes-e2b': 'test/readme-volumes.test.ts',
  'volumes-v1': 'test/readme-volumes.test.ts',
  'volumes-library': 'test/readme-library.test.ts',
  'jupyter-gateway': 'test/jupyter-gateway-notebook.test.ts',
  'internet-access': 'test/readme-internet.test.ts',
  'internet-access-pip': 'test/readme-internet.test.ts',
  'azure-python': 'test/python/langchain-azure.test.ts',
  'python-e2b': 'test/python/e2b-python-sdk.test.ts',
  'python-smolagents': 'test/python/smolagents-e2b.test.ts',
  'python-openai-agents': 'test/python/openai-agents-e2b.test.ts',
  'internet-host': 'test/readme-internet.test.ts',
  'discord-invite': 'test/readme-discord.test.ts',
  'discord-run': 'test/readme-discord.test.ts',
  'discord-transcript': 'test/readme-discord.test.ts',
};

const blocks = readmeBlocks();
let clone: string;
beforeAll(() => {
  clone = scratchClone();
});
afterAll(() => rmSync(clone, { recursive: true, force: true }));

const block = readmeBlock;

/** Each command of a block, in the scratch clone, one after another; what each printed. */
async function runEach(id: string, options: { env?: Record<string, string>; input?: string } = {}) {
  const results = [];
  for (const command of commandsOf(block(id).code)) {
    results.push({ command, ...(await runShell(command, { cwd: clone, ...options })) });
  }
  return results;
}

const RUNNERS: Record<string, () => Promise<void>> = {
  'run-hello': async () => {
    const [hello] = await runEach('run-hello');
    expect(hello!.code, hello!.stderr).toBe(0);
    expect(hello!.stdout).toContain('Busiest days:');
    // The chart the code saved is saved once, under its own name.
    expect(existsSync(path.join(clone, 'sandcell-output', 'daily.png'))).toBe(true);
    expect(existsSync(path.join(clone, 'sandcell-output', 'figure-1.png'))).toBe(false);
  },
  'run-upload': async () => {
    const [accidents] = await runEach('run-upload');
    expect(accidents!.code, accidents!.stderr).toBe(0);
    expect(accidents!.stdout).toContain('8756');
  },
  'run-more': async () => {
    const [stdin, json, repl, doctor] = await runEach('run-more');
    expect(stdin!.stdout).toMatch(/^'3\.\d+/m);
    expect(json!.code, json!.stderr).toBe(0);
    expect(JSON.parse(json!.stdout)).toMatchObject({ status: 'ok', stdout: expect.stringContaining('Busiest days:') });
    expect(repl!.code, repl!.stderr).toBe(0);
    // Its input is not a terminal here: no prompts, and the greeting goes to stderr.
    expect(repl!.stderr).toContain('Python in a sandbox');
    expect(repl!.stdout).toBe('');
    expect(doctor!.code, doctor!.stdout + doctor!.stderr).toBe(0);
  },
  languages: async () => {
    const [js, r, wc, exit, repl] = await runEach('languages');
    expect(js!.code, js!.stderr).toBe(0);
    expect(js!.stdout).toContain('busiest day: Tue (340 visitors)\n555\n');
    expect(r!.code, r!.stderr).toBe(0);
    expect(r!.stdout).toContain('best month: May');
    expect(
      readFileSync(path.join(clone, 'sandcell-output', 'figure-1.png'))
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    expect(wc!.stdout).toBe('8756 traffic_accidents.csv\n');
    expect(exit!.code).toBe(3);
    expect(repl!.code, repl!.stderr).toBe(0);
    expect(repl!.stdout).toContain('/tmp\n');
  },
  docker: async () => {
    const [setup, run] = commandsOf(block('docker').code);
    expect(setup).toMatch(/^npm run setup:docker /); // Not run: CI runs the set-up.
    const dockerMissing = await unavailableReason(createDockerBackend());
    if (dockerMissing && !requiredBackends().includes('docker')) {
      process.stderr.write(`[skipped] README run --backend docker: Docker is unavailable — ${dockerMissing}\n`);
      return;
    }
    const result = await runShell(run!, { cwd: clone });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Busiest days:');
  },
  gvisor: async () => {
    const [doctor, run] = commandsOf(block('gvisor').code);
    const gvisorMissing = await unavailableReason(createGvisorBackend());
    if (gvisorMissing && !requiredBackends().includes('gvisor')) {
      process.stderr.write(`[skipped] README run --backend gvisor: gVisor is unavailable — ${gvisorMissing}\n`);
      return;
    }
    const checked = await runShell(doctor!, { cwd: clone });
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/gVisor platform: (ptrace|kvm|systrap) \(/);
    expect(checked.stdout).toContain('gVisor: a trial session started');
    const result = await runShell(run!, { cwd: clone });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Busiest days:');
  },
  chat: async () => {
    const [exported, command, ...questions] = block('chat').code.trim().split('\n');
    expect(exported).toBe('export OPENAI_API_KEY=...');
    expect(questions.every((line) => line.startsWith('> '))).toBe(true);
    const answer = 'Traffic fines matter most.';
    await withFakeModel(answer, async (provider) => {
      const result = await runShell(`${exported}\n${command}`, {
        cwd: clone,
        // A base URL makes sandcell ask for a model's name: the default's, as OpenAI would get it.
        env: { OPENAI_BASE_URL: provider.baseURL, SANDCELL_MODEL: 'gpt-4.1' },
        input: questions.map((line) => `${line.slice(2)}\n`).join(''),
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(answer);
      expect(provider.requests[0]!.headers.authorization).toBe('Bearer ...');
      expect(provider.requests[0]!.raw).toContain('traffic_fine_amount');
    });
  },
  'chat-ollama': async () => {
    const [ollama, chat] = commandsOf(block('chat-ollama').code);
    expect(ollama).toMatch(/^ollama /); // Not run: it needs Ollama; the fake model stands in for it.
    await withFakeModel('Density.', async (provider) => {
      const result = await runShell(chat!.replace('http://localhost:11434/v1', provider.baseURL), {
        cwd: clone,
        input: 'What matters?\n',
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('Density.');
      expect(provider.requests[0]!.body.model).toBe('qwen2.5-coder');
    });
  },
};

async function withFakeModel(answer: string, body: (provider: FakeProvider) => Promise<void>) {
  const provider = await startFakeOpenAI([
    {
      toolCalls: [
        {
          name: 'execute_python_code',
          arguments: { code: 'import pandas as pd\nprint(len(pd.read_csv("traffic_accidents.csv")))' },
        },
      ],
    },
    { text: answer },
  ]);
  try {
    await body(provider);
  } finally {
    await provider.close();
  }
}

it('every fenced block in README.md and docs/ is run or skipped with a reason', () => {
  const known = new Set([...Object.keys(SKIPPED), ...Object.keys(RUN_ELSEWHERE), ...Object.keys(RUNNERS)]);
  const unknown = blocks.filter((candidate) => !known.has(candidate.id));
  expect(unknown.map((candidate) => `${candidate.file}:${candidate.line} (${candidate.id})`)).toEqual([]);
  const ids = blocks.map((candidate) => candidate.id);
  expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
  expect([...known].filter((id) => !ids.includes(id))).toEqual([]);
  // A block run elsewhere is run there: the file named asks for it by its ID.
  const notAsked = Object.entries(RUN_ELSEWHERE).filter(([id, file]) => {
    const text = existsSync(path.join(root, file)) ? readFileSync(path.join(root, file), 'utf8') : '';
    return !text.includes(`'${id}'`) && !text.includes(`"${id}"`);
  });
  expect(notAsked.map(([id, file]) => `${file} never asks for ${id}`)).toEqual([]);
});

describe('README.md and docs/ blocks run as written', () => {
  for (const [id, runner] of Object.entries(RUNNERS)) it(id, runner, 300_000);
});

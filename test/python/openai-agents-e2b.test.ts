/**
 * The OpenAI Agents SDK (`openai-agents` 0.24 with its `e2b` extra), unmodified, running a
 * `SandboxAgent` through its E2B sandbox client against a real `sandcell serve`: the model (a
 * scripted Chat Completions server) calls the sandbox's `exec_command` tool to run Python with
 * pandas and a shell command that writes a file and reads it back, then answers. Proved from what
 * really happened: the tool results the SDK sent back to the model hold the sandbox's real output
 * (computed there, in the manifest's root), `Runner.run` ends with the scripted answer, sandcell
 * listed the sandbox while the tools ran and not after the run (the client kills it on shutdown),
 * and the workspace the runner persisted at the end holds the file the command wrote, and comes back
 * in a new sandbox through the client's hydration (its archive written to /tmp). Once with the
 * workspace under /home/user (`Manifest(root=...)`), once with the SDK's default manifest, whose
 * root is /workspace, as on E2B (the client makes it with the file API and `mkdir -p`), and that
 * once more on Docker, whose /workspace and /tmp are its container's own mounts.
 * openai_agents_e2b.py drives the SDK and prints what it saw; this file asserts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '../../src/backends/docker/index.js';
import { describeWhenAvailable, unavailableReason } from '../support/backends.js';
import { KEY } from '../support/e2b.js';
import { type FakeProvider, type RecordedRequest, startFakeOpenAI } from '../support/fake-providers.js';
import { runPythonBlock, runPythonClient, type Seen } from '../support/python-clients.js';
import { readmeBlock } from '../support/readme.js';
import { killServes, type Serve, startServe, stopServe } from '../support/serve-process.js';

/** A `sandcell serve` with ARGS, and the environment that points the SDK at it. */
function serveFor(args: string[]) {
  const started: { serve?: Serve; env: Record<string, string> } = { env: {} };
  beforeAll(async () => {
    started.serve = await startServe(args, { SANDCELL_API_KEYS: KEY });
    started.env = {
      E2B_API_KEY: KEY,
      E2B_API_URL: `${started.serve.url}/e2b`,
      E2B_SANDBOX_URL: `${started.serve.url}/e2b`,
      OPENAI_AGENTS_DISABLE_TRACING: '1',
    };
  });
  afterAll(async () => {
    if (started.serve) await stopServe(started.serve, 'SIGTERM');
  });
  return started;
}
afterAll(() => killServes());

const PANDAS = [
  "python3 - <<'EOF'",
  'import pandas as pd',
  "sales = pd.DataFrame({'month': ['jan', 'feb', 'mar'], 'units': [120, 150, 90]})",
  "best = sales.loc[sales.units.idxmax(), 'month']",
  "print(f'total units: {int(sales.units.sum())}, best month: {best}')",
  'EOF',
].join('\n');
const NOTES = "printf 'kept in the workspace\\n' > notes.txt && cat notes.txt && wc -c < notes.txt && pwd";
const ANSWER = 'The three months sold 360 units (February best); notes.txt holds "kept in the workspace".';

/** A scripted conversation: the pandas code, the shell command, then the answer. */
function script() {
  return startFakeOpenAI([
    { toolCalls: [{ id: 'call_pandas', name: 'exec_command', arguments: { cmd: PANDAS } }] },
    { toolCalls: [{ id: 'call_notes', name: 'exec_command', arguments: { cmd: NOTES } }] },
    { text: ANSWER },
  ]);
}

/** The content of the tool message answering `callId` in a request the SDK sent to the model. */
function toolResult(request: RecordedRequest | undefined, callId: string): string {
  const message = request?.body.messages.find((entry: Seen) => entry.role === 'tool' && entry.tool_call_id === callId);
  return typeof message?.content === 'string' ? message.content : JSON.stringify(message?.content ?? null);
}

/** Runs the agent (with `Manifest(root=root)`, or the SDK's default manifest) and checks everything it did. */
async function expectTheAgentRan(
  fake: FakeProvider,
  root: string | undefined,
  env: Record<string, string>,
): Promise<void> {
  const seen = await runPythonClient(
    'agents',
    'openai_agents_e2b.py',
    { ...env, OPENAI_BASE_URL: fake.baseURL },
    {
      args: root ? ['--root', root] : [],
    },
  );
  const workspace = root ?? '/workspace';

  // The model was asked three times, offered the sandbox's shell, and every answer was used.
  expect(fake.requests).toHaveLength(3);
  expect(fake.remaining).toBe(0);
  const offered = (fake.requests[0]?.body.tools ?? []).map((tool: Seen) => tool.function?.name);
  expect(offered).toContain('exec_command');
  expect(fake.requests[0]?.raw).toContain(workspace);

  // What the SDK sent back to the model is what the sandbox printed: computed there, not echoed.
  const pandas = toolResult(fake.requests[1], 'call_pandas');
  expect(pandas).toContain('Process exited with code 0');
  expect(pandas).toContain('total units: 360, best month: feb');
  const notes = toolResult(fake.requests[2], 'call_notes');
  expect(notes).toContain('Process exited with code 0');
  // The file's text, its size as `wc` counted it in the sandbox, and the directory it ran in.
  expect(notes).toMatch(new RegExp(`Output:\\nkept in the workspace\\n\\s*22\\n${workspace}\\n?$`));
  expect(toolResult(fake.requests[2], 'call_pandas')).toBe(pandas);

  expect(seen.final_output).toBe(ANSWER);

  // The sandbox the tools ran in is the one sandcell listed while they ran, and none is left after.
  expect(seen.before).toEqual([]);
  expect(seen.tools).toHaveLength(2);
  const id = seen.tools[0].sandbox_id;
  expect(id).toMatch(/^[a-z0-9]{20}$/);
  expect(seen.tools).toEqual([
    { tool: 'exec_command', sandbox_id: id },
    { tool: 'exec_command', sandbox_id: id },
  ]);
  for (const listed of seen.during) {
    expect(listed).toEqual([{ id, state: 'running', template: 'code-interpreter-v1' }]);
  }
  expect(seen.after).toEqual([]);

  // The runner persisted the workspace as it stopped (a tar made by a command in the sandbox).
  expect(seen.snapshot.archives).toBe(1);
  expect(seen.snapshot.names).toContain('notes.txt');
  expect(seen.snapshot.notes).toBe('kept in the workspace\n');

  // That workspace given back to a new sandbox (the archive through the file API into /tmp, then
  // tar): the file is there, in the root, and the archive is gone; that sandbox ends too.
  expect(seen.hydrated).toEqual({ exit_code: 0, stdout: `kept in the workspace\n${workspace}\n0\n` });
  // Its write_stdin tool on a PTY: the command typed in answers, on a real terminal.
  expect(seen.pty).toMatch(/[\r\n]tty-42\r\n/);
  expect(seen.pty).toMatch(/\/dev\/pts\/\d+/);
  expect(seen.after_hydrate).toEqual([]);
}

describe("the OpenAI Agents SDK's E2B sandbox client, unmodified", () => {
  const served = serveFor([]);

  it('runs a SandboxAgent whose Python and shell commands execute in a sandcell sandbox (workspace in /home/user)', async () => {
    const fake = await script();
    try {
      await expectTheAgentRan(fake, '/home/user/workspace', served.env);
    } finally {
      await fake.close();
    }
  });

  // The SDK's default root is /workspace: the session's files there too, made with the file API and `mkdir -p`.
  it("runs it with the SDK's default manifest too (its workspace root is /workspace)", async () => {
    const fake = await script();
    try {
      await expectTheAgentRan(fake, undefined, served.env);
    } finally {
      await fake.close();
    }
  });

  it('docs/python.md: its block runs as written', async () => {
    const answer = 'The sandbox has the CPUs nproc counted.';
    const model = await startFakeOpenAI([
      { toolCalls: [{ id: 'call_nproc', name: 'exec_command', arguments: { cmd: 'nproc' } }] },
      { text: answer },
    ]);
    try {
      const run = await runPythonBlock('agents', readmeBlock('python-openai-agents').code, {
        ...served.env,
        OPENAI_BASE_URL: model.baseURL,
        OPENAI_API_KEY: 'sk-scripted',
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${answer}\n`);
      // What the sandbox's nproc printed went back to the model.
      expect(toolResult(model.requests[1], 'call_nproc')).toMatch(/Output:\n\d+\n/);
    } finally {
      await model.close();
    }
  });
});

describeWhenAvailable(
  "the OpenAI Agents SDK's E2B sandbox client (docker)",
  'docker',
  await unavailableReason(createDockerBackend()),
  () => {
    const served = serveFor(['--backend', 'docker']);

    it("runs the agent with the SDK's default manifest, persists its /workspace and hydrates it through /tmp", async () => {
      const fake = await script();
      try {
        await expectTheAgentRan(fake, undefined, served.env);
      } finally {
        await fake.close();
      }
    });
  },
);

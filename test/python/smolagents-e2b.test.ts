/**
 * smolagents' `CodeAgent` with `executor_type="e2b"` (smolagents 1.26 with its e2b extra, as
 * test/python/requirements/clients.txt pins it), unmodified, runs its code in a sandcell sandbox:
 * E2B's SDK pointed at a real `sandcell serve` on bubblewrap through its three environment
 * variables, and the agent's `OpenAIModel` at a scripted fake model (smolagents_e2b.py).
 *
 * Proved: the executor's `Sandbox.create` makes a sandcell session (the server logs it under the
 * sandbox's id); the agent's `additional_args` (smolagents' SafeSerializer), its @tool (shipped into
 * the sandbox as source) and the patched final_answer (a FinalAnswerException carrying the value)
 * work there; a step's printed output, computed by the sandbox's real pandas, reaches the model's
 * next request; a variable made in one step is there in the next; an exception's name, value and
 * traceback, with what the step printed before it, reach the model; `final_answer(value)` comes
 * back from `agent.run` as the same Python value (a tuple stays a tuple); `agent.cleanup()` kills
 * the sandbox (gone from the list, 404 to get_info, the session closed as deleted). And what
 * `additional_authorized_imports` does in a sandbox without internet: the agent still starts, and
 * the package does not import. The `pip install` every run makes for final_answer's own imports
 * (pillow, numpy: installed already) must not be refused as it is on no E2B sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY } from '../support/e2b.js';
import { type FakeProvider, startFakeOpenAI } from '../support/fake-providers.js';
import { runPythonBlock, runPythonClient, type Seen } from '../support/python-clients.js';
import { readmeBlock } from '../support/readme.js';
import { killServes, type Serve, startServe, stopServe } from '../support/serve-process.js';

/** What the model "writes": smolagents 1.26's CodeAgent format, a thought and a <code> block. */
const STEP_1 = `Thought: I will total the units by region with pandas, and try the VAT tool.
<code>
import pandas as pd
import socket
sales = pd.DataFrame({"region": ["north", "south", "north", "east"], "units": [120, 150, 90, 60]})
by_region = sales.groupby("region").units.sum()
print("by region:", by_region.to_dict())
print("spread:", sales.units.describe()[["mean", "std"]].round(3).to_dict())
print("above threshold:", int((sales.units > threshold).sum()))
print("host:", socket.gethostname())
print("vat tool:", vat(float(by_region.max())))
</code>`;

const STEP_2 = `Thought: by_region is still there; I will look at the west region too.
<code>
top = by_region.idxmax()
print("top:", top, int(by_region[top]))
west = by_region["west"]
</code>`;

const STEP_3 = `Thought: There is no west region, so north is the answer.
<code>
final_answer({"top": top, "units": int(by_region[top]), "gross": vat(float(by_region[top]))["gross"], "shares": tuple(round(float(units) / by_region.sum(), 3) for units in by_region)})
</code>`;

const ANSWER = "{'top': 'north', 'units': 210, 'gross': 252.0, 'shares': (0.143, 0.5, 0.357)}";

let serve: Serve;
let fake: FakeProvider;
let seen: Seen;

/** The text of a recorded Chat Completions message (smolagents sends content as a list of parts). */
function textOf(message: { content: string | { type: string; text?: string }[] }): string {
  return typeof message.content === 'string'
    ? message.content
    : message.content.map((part) => part.text ?? '').join('');
}

/** The text of the last message of the model's request number `index` (0-based). */
function lastMessage(index: number): string {
  const messages = fake.requests[index]?.body.messages ?? [];
  return messages.length ? textOf(messages.at(-1)) : '';
}

beforeAll(async () => {
  serve = await startServe([], { SANDCELL_API_KEYS: KEY });
  fake = await startFakeOpenAI([{ text: STEP_1 }, { text: STEP_2 }, { text: STEP_3 }]);
  seen = await runPythonClient('clients', 'smolagents_e2b.py', {
    E2B_API_KEY: KEY,
    E2B_API_URL: `${serve.url}/e2b`,
    E2B_SANDBOX_URL: `${serve.url}/e2b`,
    FAKE_OPENAI_BASE_URL: fake.baseURL,
  });
}, 300_000);

afterAll(async () => {
  if (fake) await fake.close();
  if (serve) await stopServe(serve, 'SIGTERM');
  killServes();
});

describe('smolagents CodeAgent with executor_type="e2b", unmodified', () => {
  it('creates a sandcell sandbox for the agent, and agent.cleanup() kills it', () => {
    const id = seen.sandbox.id;
    expect(seen.sandbox).toEqual({
      executor: 'E2BExecutor',
      id,
      listed: true,
      template: 'code-interpreter-v1',
      state: 'running',
    });
    expect(seen.still_listed_after_run).toBe(true);
    expect(seen.after_cleanup).toEqual({
      executor_has_sandbox: false,
      listed: false,
      get_info: 'SandboxNotFoundException',
    });
    const ofIt = serve.logs.filter((entry) => entry.session === id);
    expect(ofIt.map((entry) => [entry.msg, entry.source ?? entry.reason])).toEqual([
      ['session created', 'e2b'],
      ['session closed', 'deleted'],
    ]);
  });

  it("runs each step's code in the sandbox: real pandas, the tool, additional_args; the output reaches the model", () => {
    expect(fake.requests).toHaveLength(3);
    expect(fake.remaining).toBe(0);
    // The first request has the task; the second the observation of step 1, as the sandbox printed it.
    expect(lastMessage(0)).toContain('Which region sold the most units');
    const observation = lastMessage(1);
    expect(observation).toContain("by region: {'east': 60, 'north': 210, 'south': 150}");
    expect(observation).toContain("spread: {'mean': 105.0, 'std': 38.73}");
    expect(observation).toContain('above threshold: 2');
    // The code ran in sandcell's sandbox (its host name), not in the agent's process.
    expect(observation).toContain('host: sandbox');
    expect(seen.local_host).not.toBe('sandbox');
    expect(observation).toContain("vat tool: {'gross': 252.0, 'host': 'sandbox'}");
  });

  it('keeps state between steps, and an exception with its traceback reaches the model', () => {
    expect(seen.steps.map((step: Seen) => step.error)).toEqual([null, 'AgentExecutionError', null]);
    const error = lastMessage(2);
    // Printed before the exception, with a variable step 1 defined.
    expect(error).toContain('top: north 210');
    expect(error).toContain('Executing code yielded an error:\nKeyError\n');
    expect(error).toContain("'west'");
    expect(error).toContain('west = by_region["west"]');
    expect(error).not.toContain('NameError');
  });

  it('returns the value given to final_answer from agent.run, as the same Python value', () => {
    expect(seen.answer).toEqual({ repr: ANSWER, type: 'dict' });
    expect(seen.steps.at(-1).code).toContain('final_answer(');
  });

  // Every agent.run's send_tools runs `!pip install pillow numpy` (the imports of the patched
  // final_answer). On E2B (an official python image, no PEP 668 marker) pip finds both installed and
  // says so; it must do the same here, offline, rather than refuse the whole install.
  it("send_tools' pip install of final_answer's imports finds them installed, as on E2B", () => {
    // What the executor logged between the task and step 1: pip's output.
    const log: string = seen.log;
    const pip = log.slice(log.indexOf('OpenAIModel - scripted-model'), log.indexOf(' Step 1 '));
    expect(pip).not.toContain('externally-managed-environment');
    expect(pip).toContain('Requirement already satisfied: pillow');
    expect(pip).toContain('Requirement already satisfied: numpy');
  });

  it('starts an agent with additional_authorized_imports though pip has no index to reach', () => {
    const imports = seen.imports;
    expect(imports.constructed).toBe(true);
    expect(imports.installed_packages).toEqual(['some_package']);
    expect(imports.listed).toBe(true);
    expect(imports.import).toContain('ModuleNotFoundError');
    expect(imports.import).toContain("No module named 'some_package'");
    expect(imports.still_runs).toBe('42\n');
    expect(imports.listed_after_cleanup).toBe(false);
  });
});

describe('smolagents on a server started with --allow-package-index', () => {
  let indexed: Serve;
  let env: Record<string, string>;
  beforeAll(async () => {
    indexed = await startServe(['--allow-package-index'], { SANDCELL_API_KEYS: KEY });
    env = {
      E2B_API_KEY: KEY,
      E2B_API_URL: `${indexed.url}/e2b`,
      E2B_SANDBOX_URL: `${indexed.url}/e2b`,
      OPENAI_API_KEY: 'sk-scripted',
    };
  }, 60_000);
  afterAll(async () => {
    if (indexed) await stopServe(indexed, 'SIGTERM');
  });

  /** Runs `code` with the model scripted to answer `steps`, and checks the model was asked once per step. */
  async function runAgent(code: string, steps: string[]) {
    const model = await startFakeOpenAI(steps.map((text) => ({ text })));
    try {
      const run = await runPythonBlock('clients', code, { ...env, OPENAI_BASE_URL: model.baseURL });
      expect(run.code, run.stderr).toBe(0);
      expect(model.remaining).toBe(0);
      // smolagents says "Shutting down sandbox..." and "Sandbox cleanup completed" as the `with` block ends; what was printed is before.
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines.slice(-2)).toEqual(['Shutting down sandbox...', 'Sandbox cleanup completed']);
      return lines.at(-3);
    } finally {
      await model.close();
    }
  }

  it('docs/python.md: its block runs as written', async () => {
    const answer = await runAgent(readmeBlock('python-smolagents').code, [
      'Thought: I will sum the squares.\n<code>\nfinal_answer(sum(n * n for n in range(1, 11)))\n</code>',
    ]);
    expect(answer).toBe('385');
  }, 180_000);

  it("additional_authorized_imports are installed from the host pip's index, and the agent's code imports them", async () => {
    const code = [
      'from smolagents import CodeAgent, OpenAIModel',
      'with CodeAgent(tools=[], model=OpenAIModel(model_id="gpt-4o"), executor_type="e2b",',
      '               additional_authorized_imports=["cowsay"]) as agent:',
      '    print(repr(agent.run("Make the cow say hi.")))',
    ].join('\n');
    const answer = await runAgent(code, [
      'Thought: cowsay is installed.\n<code>\nimport cowsay\nfinal_answer(cowsay.get_output_string("cow", "hi"))\n</code>',
    ]);
    // The cow's own drawing, which only the installed package makes.
    expect(answer).toContain('| hi |');
    expect(answer).toContain('(oo)');
  }, 180_000);
});

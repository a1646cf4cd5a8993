/**
 * `sandcell ask` and `sandcell chat` as processes: the reference scenario on
 * real pandas in a real sandbox, the example script through the sandcell/agents
 * export, and the failures that end a command before any sandbox starts (exit
 * codes and messages). Their prompts, rendering and approval flow run
 * in-process on the scripted backend in src/cli/agent-commands.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { type Finished, runProcess } from './support/process.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const trafficCsv = path.join(root, 'examples', 'traffic-accidents', 'traffic_accidents.csv');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-agents-cli-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

/** No keys or endpoints from the machine running the tests; no config file. */
const cleanEnvironment = {
  OPENAI_API_KEY: '',
  OPENAI_BASE_URL: '',
  ANTHROPIC_API_KEY: '',
  ANTHROPIC_BASE_URL: '',
  AZURE_OPENAI_API_KEY: '',
  AZURE_OPENAI_ENDPOINT: '',
  SANDCELL_PROVIDER: '',
  SANDCELL_MODEL: '',
  XDG_CONFIG_HOME: workspace,
  NO_COLOR: '1',
};

function sandcell(args: string[], input = '', env: Record<string, string> = {}): Promise<Finished> {
  return runProcess(process.execPath, [bin, ...args], { cwd: workspace, env: { ...cleanEnvironment, ...env }, input });
}

const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });

describe('sandcell ask and chat', () => {
  let provider: FakeProvider | undefined;
  afterEach(async () => {
    await provider?.close();
    provider = undefined;
  });

  it('ask --json: answers from code that ran on the data, with the code, outputs and saved files', async () => {
    provider = await startFakeOpenAI([
      {
        toolCalls: [
          run(
            'import pandas as pd\ndf = pd.read_csv("traffic_accidents.csv")\nc = df.corr()["accidents"].drop("accidents")\nprint(c.idxmin(), round(c.min(), 3))\nc.to_csv("correlations.csv")',
          ),
        ],
      },
      { text: 'traffic_fine_amount matters most (r = -0.745).' },
    ]);
    const outputDir = path.join(workspace, 'ask-out');
    const result = await sandcell([
      'ask',
      'Which factor matters most?',
      '--data',
      trafficCsv,
      '--json',
      '--base-url',
      provider.baseURL,
      '--model',
      'local-model',
      '-o',
      outputDir,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout);
    expect(output).toMatchObject({
      answer: 'traffic_fine_amount matters most (r = -0.745).',
      stopReason: 'answer',
      model: { provider: 'openai', model: 'local-model' },
      data: [{ sessionPath: '/mnt/data/traffic_accidents.csv', rows: 8756, format: 'csv' }],
    });
    expect(output.executions).toHaveLength(1);
    expect(output.executions[0]).toMatchObject({ status: 'ok', stdout: 'traffic_fine_amount -0.745\n' });
    expect(output.files).toEqual([
      {
        path: 'correlations.csv',
        size: expect.any(Number),
        kind: 'file',
        savedTo: path.join(outputDir, 'correlations.csv'),
      },
    ]);
    expect(readFileSync(path.join(outputDir, 'correlations.csv'), 'utf8')).toContain('traffic_fine_amount,-0.745');
    // No key given: the local server got a placeholder, never a real key from the environment.
    expect(provider.requests[0]!.headers.authorization).toBe('Bearer sandcell-no-key');
    expect(provider.requests[0]!.body.model).toBe('local-model');
  });

  it('examples/traffic-accidents/analyse.mjs runs through the sandcell/agents export', async () => {
    provider = await startFakeOpenAI([
      {
        toolCalls: [
          run('import pandas as pd\ndf = pd.read_csv("traffic_accidents.csv")\nprint(df["accidents"].mean().round(2))'),
        ],
      },
      { text: 'On average 20.63 accidents.' },
    ]);
    const script = path.join(root, 'examples', 'traffic-accidents', 'analyse.mjs');
    const result = await runProcess(process.execPath, [script, 'How many accidents on average?'], {
      cwd: workspace,
      env: { ...cleanEnvironment, OPENAI_BASE_URL: provider!.baseURL, SANDCELL_MODEL: 'local' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('On average 20.63 accidents.\n');
    expect(result.stderr).toContain('20.63');
    expect(provider.requests[0]!.body.messages[0].content).toContain('traffic_fine_amount | Traffic fine amount');
  });

  it('names the variable to set when no key is configured', async () => {
    const result = await sandcell(['ask', 'Anything?', '--json']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('No OpenAI API key: set OPENAI_API_KEY');
    expect(JSON.parse(result.stdout)).toEqual({
      error: { code: 'model-configuration', message: expect.stringContaining('OPENAI_API_KEY') },
    });
    const anthropic = await sandcell(['chat', '--provider', 'anthropic']);
    expect(anthropic.code).toBe(2);
    expect(anthropic.stderr).toContain('set ANTHROPIC_API_KEY');
    const azure = await sandcell(['ask', 'q', '--provider', 'azure', '--model', 'deployment']);
    expect(azure.code).toBe(2);
    expect(azure.stderr).toContain('AZURE_OPENAI_ENDPOINT');
  });

  it('says which endpoint it cannot reach, and what to check', async () => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const result = await sandcell([
      'ask',
      'Anything?',
      '--base-url',
      `http://127.0.0.1:${port}/v1`,
      '--model',
      'llama3.1',
    ]);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(`Cannot reach the OpenAI-compatible server at http://127.0.0.1:${port}/v1`);
    expect(result.stderr).toContain('--base-url');
  });

  it('refuses a data path that does not exist before starting anything', async () => {
    const result = await sandcell([
      'ask',
      'q',
      '--data',
      'missing.csv',
      '--base-url',
      'http://127.0.0.1:9/v1',
      '--model',
      'm',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Data path missing.csv cannot be read: ENOENT');
  });
});

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type FakeProvider, startFakeAnthropic, startFakeOpenAI } from './support/fake-providers.js';
import { type Finished, runProcess } from './support/process.js';
import { toolResults } from './support/wire.js';

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

  it('ask: prints the answer on stdout and progress, code and output on stderr; exits 1 when it gives up', async () => {
    provider = await startFakeAnthropic([
      { text: 'Let me parse it.', toolCalls: [run('raise ValueError("bad data")')] },
      { toolCalls: [run('raise ValueError("still bad")')] },
      { text: 'The data could not be parsed.' },
    ]);
    const result = await sandcell(
      ['ask', 'Parse it.', '--provider', 'anthropic', '--max-attempts', '2', '--model', 'claude-test'],
      '',
      { ANTHROPIC_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: provider.baseURL },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('The data could not be parsed.\n');
    expect(result.stderr).toContain('Let me parse it.\n── code (attempt 1/2) ──');
    expect(result.stderr).toContain('ValueError: still bad');
    expect(result.stderr).toContain('[gave up: the code failed 2 times in a row]');
    expect(provider.requests[0]!.headers['x-api-key'] ?? provider.requests[0]!.headers.authorization).toMatch(
      /sk-test/,
    );
  });

  it('chat --approve: run, skip and edit, then exit', async () => {
    provider = await startFakeOpenAI([
      { toolCalls: [run('rows = len(open("traffic_accidents.csv").read().splitlines()) - 1\nprint("rows:", rows)')] },
      { toolCalls: [run('open("skipped.txt", "w").write("should not exist")')] },
      { toolCalls: [run('print("original")')] },
      { text: 'There are 8756 rows.' },
      { toolCalls: [run('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')] },
      { text: 'Here is the chart.' },
    ]);
    const outputDir = path.join(workspace, 'chat-out');
    const input = [
      'How many rows?',
      'r',
      's',
      'e',
      'print("edited", rows)',
      '.',
      'Plot something',
      'run',
      'exit',
      '',
    ].join('\n');
    const result = await sandcell(
      ['chat', '--data', trafficCsv, '--approve', '--base-url', provider.baseURL, '--model', 'm', '-o', outputDir],
      input,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toContain('sandcell chat · openai m');
    expect(out).toContain('loaded');
    expect(out).toContain('(8756 rows × 10 columns)');
    expect(out).toContain('rows: 8756');
    expect(out).toContain('[skipped: the model is told you declined]');
    expect(out).toContain('edited 8756');
    expect(out).toContain('There are 8756 rows.');
    expect(out).toContain('Here is the chart.');
    expect(out).toContain(`[figure saved to ${path.relative(workspace, path.join(outputDir, 'figure-1.png'))}]`);
    expect(readFileSync(path.join(outputDir, 'figure-1.png')).subarray(1, 4).toString()).toBe('PNG');
    expect(existsSync(path.join(outputDir, 'skipped.txt'))).toBe(false);
    const results = toolResults('openai', provider.requests[3]!);
    expect(results[1]!.content).toContain('The user declined to run this code');
    expect(results[2]!.content).toContain('The user edited the code before running it');
    expect(provider.remaining).toBe(0);
  });

  it('chat ends at the end of input, and reads a context file', async () => {
    provider = await startFakeOpenAI([{ text: 'Hello.' }]);
    const context = path.join(workspace, 'columns.md');
    writeFileSync(context, 'accidents: number of recorded accidents\n');
    const result = await sandcell(
      ['chat', '--context', context, '--base-url', provider.baseURL, '--model', 'm'],
      'hi\n',
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Hello.');
    expect(provider.requests[0]!.body.messages[0].content).toContain('accidents: number of recorded accidents');
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

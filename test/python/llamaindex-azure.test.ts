/**
 * LlamaIndex's `AzureCodeInterpreterToolSpec` (llama-index-tools-azure-code-interpreter 0.7.0, as
 * test/python/requirements/clients.txt pins it), unmodified, against a real `sandcell serve` on
 * its /azure door (api-version 2024-02-02-preview: code/execute, files/upload, files,
 * files/content/{name}), set up as docs/azure.md says: a sandcell key as the token, by replacing
 * the spec's access_token_provider. Its tools run in a LlamaIndex `ReActAgent` (llama-index-core
 * 0.14) whose model is a scripted fake OpenAI server: the agent's code_interpreter calls run in one
 * sandcell session (state kept: pandas, then a chart of the same DataFrame saved locally as PNG),
 * each observation is the service's JSON in Azure's shape and is what the model is sent next, and
 * list_files is a tool the agent calls too. Then upload_file, list_files and download_file_to_local
 * round-trip bytes exactly; another session id is another session; a wrong key is refused.
 * llamaindex_azure.py prints what it saw; this file asserts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeProvider, type RecordedRequest, startFakeOpenAI } from '../support/fake-providers.js';
import { runPythonClient } from '../support/python-clients.js';
import { killServes, type Serve, startServe, stopServe } from '../support/serve-process.js';

const KEY = 'llamaindex-azure-test-key';

/** The agent's first call: real pandas, a file written, and a computed last value. */
const FIRST_CODE = [
  'import pandas as pd',
  "sales = pd.DataFrame({'month': ['Jan', 'Feb', 'Mar'], 'units': [120, 150, 90]})",
  "sales.to_csv('sales.csv', index=False)",
  "print('months:', len(sales))",
  'int(sales.units.sum())',
].join('\n');
/** The second: the same DataFrame (state kept), and a figure. */
const SECOND_CODE = [
  'import matplotlib.pyplot as plt',
  "print('best month:', sales.loc[sales.units.idxmax(), 'month'])",
  'plt.bar(sales.month, sales.units)',
  'plt.show()',
].join('\n');
const SALES_CSV = 'month,units\nJan,120\nFeb,150\nMar,90\n';

/** A ReAct step calling a tool, as the model writes it. */
const action = (thought: string, tool: string, input: Record<string, unknown>) => ({
  text: `Thought: ${thought}\nAction: ${tool}\nAction Input: ${JSON.stringify(input)}`,
});

/** The text of a recorded request's last message (a string, or OpenAI's text parts). */
function lastMessageText(request: RecordedRequest | undefined): string {
  const content = request?.body.messages.at(-1)?.content;
  if (typeof content === 'string') return content;
  return (content as { type: string; text?: string }[]).map((part) => part.text ?? '').join('');
}

let serve: Serve;
let fake: FakeProvider;
beforeAll(async () => {
  serve = await startServe([], { SANDCELL_API_KEYS: KEY });
  fake = await startFakeOpenAI([
    action('I need to add up the units.', 'code_interpreter', { python_code: FIRST_CODE }),
    action('Now the chart.', 'code_interpreter', { python_code: SECOND_CODE }),
    action('Which files are there?', 'list_files', {}),
    { text: 'Thought: I can answer without using any more tools.\nAnswer: We sold 360 units; February was best.' },
  ]);
});
afterAll(async () => {
  await fake?.close();
  if (serve) await stopServe(serve, 'SIGTERM');
  killServes();
});

describe("LlamaIndex's AzureCodeInterpreterToolSpec in a ReActAgent, unmodified", () => {
  it('runs the agent’s code in a sandcell session, answers in Azure’s shape, and moves files both ways', async () => {
    const seen = await runPythonClient(
      'clients',
      'llamaindex_azure.py',
      {
        SANDCELL_AZURE_ENDPOINT: `${serve.url}/azure`,
        SANDCELL_KEY: KEY,
        OPENAI_BASE_URL: fake.baseURL,
        OPENAI_API_KEY: 'sk-fake',
      },
      { timeoutMs: 150_000 },
    );

    expect(seen.tools).toEqual(['code_interpreter', 'list_files']);
    const [first, second, listed, ...more] = seen.agent.calls;
    expect(more).toEqual([]);

    // The first call: the code the model wrote, the service's JSON back.
    expect(first.tool).toBe('code_interpreter');
    expect(first.kwargs).toEqual({ python_code: FIRST_CODE });
    expect(first.is_error).toBe(false);
    expect(first.raw).toEqual({
      $id: '1',
      properties: {
        $id: '2',
        status: 'Success',
        stdout: 'months: 3\n',
        stderr: '',
        result: 360,
        executionTimeInMilliseconds: expect.any(Number),
      },
    });
    expect(first.content).toContain("'result': 360");
    expect(first.content).toContain("'stdout': 'months: 3\\n'");

    // The second: `sales` was still there; the figure came back as Azure's image object, which the
    // spec saved under local_save_path (its base64 replaced by saved_to_local_path).
    expect(second.tool).toBe('code_interpreter');
    expect(second.raw).toEqual({
      $id: '1',
      properties: {
        $id: '2',
        status: 'Success',
        stdout: 'best month: Feb\n',
        stderr: '',
        result: { type: 'image', format: 'png', saved_to_local_path: true },
        executionTimeInMilliseconds: expect.any(Number),
      },
    });
    expect(seen.charts).toEqual([{ prefix: true, magic: '89504e470d0a1a0a' }]);

    // list_files as the agent's tool: the file the code wrote, under /mnt/data.
    expect(listed.tool).toBe('list_files');
    expect(listed.content).toBe(
      `[RemoteFileMetadata(filename='sales.csv', size_in_bytes=${SALES_CSV.length}, file_full_path='/mnt/data/sales.csv')]`,
    );

    // The model: streamed, told about both tools, then sent each observation as the next message.
    expect(fake.requests).toHaveLength(4);
    expect(fake.requests[0]?.body.stream).toBe(true);
    expect(fake.requests[0]?.body.model).toBe('gpt-4o');
    const system = fake.requests[0]?.body.messages[0];
    expect(system.role).toBe('system');
    expect(JSON.stringify(system.content)).toContain('code_interpreter');
    expect(JSON.stringify(system.content)).toContain('list_files');
    expect(lastMessageText(fake.requests[1])).toBe(`Observation: ${first.content}`);
    expect(lastMessageText(fake.requests[2])).toBe(`Observation: ${second.content}`);
    expect(lastMessageText(fake.requests[3])).toBe(`Observation: ${listed.content}`);
    expect(fake.requests[3]?.raw).not.toContain('base64_data');
    expect(seen.agent.answer).toBe('We sold 360 units; February was best.');

    // upload_file: the spec names the part /mnt/data/blob.bin; Azure's old list shape back.
    const blobSize = 256 * 4 + 6; // bytes(range(256)) * 4 + b"\r\n\x00end"
    expect(seen.upload).toEqual([{ filename: 'blob.bin', size: blobSize, full: '/mnt/data/blob.bin' }]);
    expect(seen.read_by_code).toBe(seen.local_sha256);
    expect(seen.list).toEqual([
      { filename: 'blob.bin', size: blobSize, full: '/mnt/data/blob.bin' },
      { filename: 'sales.csv', size: SALES_CSV.length, full: '/mnt/data/sales.csv' },
    ]);

    // download_file_to_local: to a path (returns None), and as bytes, by name or /mnt/data/ path.
    expect(seen.download_to_path_returns).toBe('None');
    expect(seen.download).toEqual({
      sales_csv: SALES_CSV,
      blob_exact: true,
      blob_by_full_path_exact: true,
      missing: 404,
    });

    expect(seen.other_session).toEqual({ files: 0, sales: false });
    expect(seen.wrong_key).toBe(401);
  }, 180_000);
});

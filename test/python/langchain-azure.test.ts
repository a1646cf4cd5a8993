/**
 * LangChain's `SessionsPythonREPLTool` (langchain-azure-dynamic-sessions 1.0.4, as
 * test/python/requirements/clients.txt pins it), unmodified, against a real `sandcell serve` on
 * its /azure door (api-version 2024-02-02-preview: code/execute, files/upload, files,
 * files/content/{name}), set up as docs/azure.md shows: a sandcell key from access_token_provider.
 * invoke keeps state between calls (pandas), answers the content LangChain builds from Azure's
 * properties (result as JSON, stdout, stderr) and, for a tool call, those properties as the
 * artifact; an error's traceback is in stderr and the session survives it; a figure's base64 is in
 * the artifact only. upload_file (from data and from a local file), list_files and download_file
 * round-trip bytes exactly, names with spaces too; another session id is another session; a wrong
 * key is refused. langchain_azure.py prints what it saw; this file asserts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPythonBlock, runPythonClient } from '../support/python-clients.js';
import { readmeBlock } from '../support/readme.js';
import { killServes, type Serve, startServe, stopServe } from '../support/serve-process.js';

const KEY = 'langchain-azure-test-key';
const Q2_CSV = 'month,units\nApr,75\nMay,310\nJun,42\n';
const HALF_YEAR_CSV = 'month,units\nJan,120\nFeb,150\nMar,90\nApr,75\nMay,310\nJun,42\n';
const BLOB_SIZE = 256 * 3 + 4; // bytes(range(256)) * 3 + b"\x00\r\n\xff"

let serve: Serve;
beforeAll(async () => {
  serve = await startServe([], { SANDCELL_API_KEYS: KEY });
});
afterAll(async () => {
  if (serve) await stopServe(serve, 'SIGTERM');
  killServes();
});

describe("LangChain's SessionsPythonREPLTool, unmodified", () => {
  it('runs code with state, answers Azure’s properties, and uploads, lists and downloads files', async () => {
    const seen = await runPythonClient(
      'clients',
      'langchain_azure.py',
      { SANDCELL_AZURE_ENDPOINT: `${serve.url}/azure`, SANDCELL_KEY: KEY },
      { timeoutMs: 150_000 },
    );

    // invoke: sanitised input (the ```python fence dropped), no last value: result "".
    expect(seen.define).toEqual({ result: '', stdout: 'months: 3\n', stderr: '' });
    expect(seen.use).toEqual({ result: 2520, stdout: 'best: Feb\n', stderr: '' });
    expect(seen.float).toEqual({ result: 4.285714, stdout: '', stderr: '' });
    expect(seen.text).toEqual({ result: 'Jan / Feb / Mar', stdout: '', stderr: '' });

    // A tool call: the ToolMessage's artifact is the service's `properties`, as Azure answers them.
    expect(seen.tool_call).toEqual({
      type: 'ToolMessage',
      tool_call_id: 'call-1',
      content: { result: 27, stdout: '', stderr: '' },
      artifact: {
        $id: '2',
        status: 'Success',
        stdout: '',
        stderr: '',
        result: 27,
        executionTimeInMilliseconds: expect.any(Number),
      },
    });
    expect(Number.isInteger(seen.tool_call.artifact.executionTimeInMilliseconds)).toBe(true);

    expect(seen.error.result).toBe('');
    expect(seen.error.stdout).toBe('');
    expect(seen.error.stderr).toContain('ZeroDivisionError');
    expect(seen.error.stderr).toContain('division by zero');
    expect(seen.error.stderr).toContain('return a / b');
    expect(seen.after_error).toBe(3);

    expect(seen.chart).toEqual({
      content_result: { type: 'image', format: 'png' },
      artifact_keys: ['$id', 'executionTimeInMilliseconds', 'result', 'status', 'stderr', 'stdout'],
      image: { type: 'image', format: 'png', magic: '89504e470d0a1a0a' },
    });

    // Files, in Azure's old shapes ({value:[{properties:{filename,size}}]}) that the tool reads.
    expect(seen.upload).toEqual([
      { filename: 'blob.bin', size: BLOB_SIZE, full_path: '/mnt/data/blob.bin' },
      { filename: 'q2 sales.csv', size: Q2_CSV.length, full_path: '/mnt/data/q2 sales.csv' },
    ]);
    expect(seen.read_by_code).toEqual({ result: 787, stdout: `${seen.blob_sha256}\n`, stderr: '' });
    expect(seen.list).toEqual([
      { filename: 'blob.bin', size: BLOB_SIZE },
      { filename: 'half year.csv', size: HALF_YEAR_CSV.length },
      { filename: 'q2 sales.csv', size: Q2_CSV.length },
    ]);
    expect(seen.download).toEqual({
      half_year: HALF_YEAR_CSV,
      returned_too: true,
      blob_exact: true,
      q2_exact: true,
      missing: 404,
    });

    expect(seen.other_session).toEqual({ files: 0, sales: false });
    expect(seen.wrong_key).toBe(401);
  }, 180_000);

  it('docs/azure.md: its Python block (LangChain and LlamaIndex) runs as written', async () => {
    const code = readmeBlock('azure-python').code.replaceAll('http://127.0.0.1:8080', serve.url);
    const run = await runPythonBlock('clients', code, { SANDCELL_KEY: KEY });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('360\n42\n');
  });
});

/**
 * E2B's code interpreter driven by the unmodified `@e2b/code-interpreter` 2.8.0 on real bubblewrap
 * sandboxes, configured only by E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY: runCode's state,
 * output as it comes, errors, charts, DataFrames, every language, environment variables, contexts,
 * the client's own timeout (the execution is interrupted and the sandbox stays usable), and what
 * the interpreter refuses.
 */
import { NotFoundError, Sandbox, type SandboxOpts, TimeoutError } from '@e2b/code-interpreter';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;
const sandboxes: Sandbox[] = [];

beforeAll(async () => {
  server = await startE2bServer({ sessionOptions: { maxCodeBytes: 64 * 1024 } });
});
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((sandbox) => sandbox.kill().catch(() => undefined)));
});
afterAll(async () => {
  await server?.close();
});

async function newSandbox(options?: SandboxOpts): Promise<Sandbox> {
  const sandbox = await Sandbox.create(options);
  sandboxes.push(sandbox);
  return sandbox;
}

/** A raw request to the sandbox's code interpreter, as the SDK sends it, with headers changed as given. */
function interpreterRequest(sandbox: Sandbox, path: string, body: string, headers: Record<string, string> = {}) {
  const tokens = sandbox as unknown as { trafficAccessToken?: string; envdAccessToken?: string };
  return fetch(`${server.url}/e2b${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'e2b-sandbox-id': sandbox.sandboxId,
      'e2b-sandbox-port': '49999',
      ...(tokens.trafficAccessToken ? { 'e2b-traffic-access-token': tokens.trafficAccessToken } : {}),
      ...(tokens.envdAccessToken ? { 'x-access-token': tokens.envdAccessToken } : {}),
      ...headers,
    },
    body,
  });
}

describe('runCode', () => {
  it('keeps state between calls, reports errors as data and counts executions', async () => {
    const sandbox = await newSandbox();
    const first = await sandbox.runCode('x = 40\nprint("set")');
    expect(first.logs.stdout).toEqual(['set\n']);
    expect(first.results).toEqual([]);
    const second = await sandbox.runCode('x + 2');
    expect(second.text).toBe('42');
    expect(second.results[0]?.isMainResult).toBe(true);
    expect(second.executionCount).toBe((first.executionCount ?? 0) + 1);
    // E2B's working directory, in the default context too.
    expect((await sandbox.runCode('import os\nos.getcwd()')).text).toBe('/home/user');
    expect((await sandbox.runCode("'a string'")).text).toBe('a string');

    const failed = await sandbox.runCode('def f():\n    raise ValueError("boom")\nf()');
    expect(failed.error).toMatchObject({ name: 'ValueError', value: 'boom' });
    expect(failed.error?.traceback).toContain('ValueError: boom');
    expect(failed.error?.traceback).toContain('f()');
  });

  it('shows sys.exit(n) as Jupyter does and keeps the state; exit() and quit() end only the code', async () => {
    const sandbox = await newSandbox();
    await sandbox.runCode('import sys\nx = 1');
    const exited = await sandbox.runCode('sys.exit(3)');
    expect(exited.error).toMatchObject({ name: 'SystemExit', value: '3' });
    expect(exited.logs.stderr).toEqual([]);
    for (const code of ['exit()', 'quit()']) {
      const ended = await sandbox.runCode(`x += 1\n${code}\nx = 100`);
      expect(ended.error).toBeUndefined();
      expect(ended.logs).toEqual({ stdout: [], stderr: [] });
    }
    expect((await sandbox.runCode('x')).text).toBe('3');
  });

  it('calls onStdout as output comes, before the execution ends', async () => {
    const sandbox = await newSandbox();
    // The code waits until the test, told by onStdout that it started, creates a file from another context.
    const code = [
      'import os, time',
      'print("ready", flush=True)',
      'for _ in range(600):',
      '    if os.path.exists("go"): break',
      '    time.sleep(0.1)',
      'print("released" if os.path.exists("go") else "never released")',
    ].join('\n');
    const releases: Promise<unknown>[] = [];
    const seen: string[] = [];
    const execution = await sandbox.runCode(code, {
      onStdout: (message) => {
        seen.push(message.line);
        if (message.line.includes('ready')) releases.push(sandbox.runCode('touch go', { language: 'bash' }));
      },
    });
    await Promise.all(releases);
    expect(execution.logs.stdout.join('')).toBe('ready\nreleased\n');
    expect(seen.join('')).toBe('ready\nreleased\n');
  });

  it('returns a matplotlib chart as png and a DataFrame as html and text', async () => {
    const sandbox = await newSandbox();
    const chart = await sandbox.runCode(
      'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("trend")\nplt.show()',
    );
    const image = chart.results.find((result) => result.png);
    expect(image?.isMainResult).toBe(false);
    expect(
      Buffer.from(image?.png ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');

    const frame = await sandbox.runCode(
      'import pandas as pd\npd.DataFrame({"city": ["Oslo", "Lima"], "visits": [3, 5]})',
    );
    const table = frame.results[0];
    expect(table?.isMainResult).toBe(true);
    expect(table?.html).toContain('<table');
    expect(table?.html).toContain('Lima');
    expect(table?.text).toMatch(/city\s+visits/);
  });

  it('carries non-ASCII output intact, however the stream is cut into chunks', async () => {
    const sandbox = await newSandbox();
    const execution = await sandbox.runCode('print("é✓😀" * 40000)');
    expect(execution.logs.stdout.join('')).toBe(`${'é✓😀'.repeat(40000)}\n`);
  });
});

describe('languages and environment variables', () => {
  it('runs python, javascript, typescript, bash and r, each seeing `envs` for that run only', async () => {
    const sandbox = await newSandbox();
    const envs = { GREETING: "it's here" };
    // A repr in double quotes keeps them, as on E2B, which takes single quotes off only.
    const quoted = `"it's here"`;
    const cases = [
      {
        language: 'python',
        read: 'import os\nos.environ.get("GREETING", "unset")',
        value: quoted,
        after: 'unset',
      },
      { language: 'javascript', read: 'process.env.GREETING ?? "unset"', value: quoted, after: 'unset' },
      {
        language: 'typescript',
        read: 'const value: string = process.env.GREETING ?? "unset"; value',
        value: quoted,
        after: 'unset',
      },
      {
        language: 'r',
        read: 'Sys.getenv("GREETING", unset = "unset")',
        value: `[1] "it's here"`,
        after: '[1] "unset"',
      },
    ];
    for (const { language, read, value, after } of cases) {
      const during = await sandbox.runCode(read, { language, envs });
      expect(during.error, language).toBeUndefined();
      expect(during.text, language).toBe(value);
      // Each context keeps its own bindings: the TypeScript `const` is declared once only.
      const next = language === 'typescript' ? 'process.env.GREETING ?? "unset"' : read;
      expect((await sandbox.runCode(next, { language })).text, language).toBe(after);
    }
    const readInBash = 'echo "$' + '{GREETING:-unset}"';
    const bash = await sandbox.runCode(`${readInBash}\npwd`, { language: 'bash', envs });
    expect(bash.logs.stdout.join('')).toBe("it's here\n/home/user\n");
    expect((await sandbox.runCode(readInBash, { language: 'bash' })).logs.stdout).toEqual(['unset\n']);
    // A subprocess started by the code inherits them too.
    const child = await sandbox.runCode(
      'import subprocess\nsubprocess.run(["printenv", "GREETING"], capture_output=True, text=True).stdout',
      { envs },
    );
    expect(child.text).toBe(`"it's here\\n"`);
  });

  it("gives every execution the sandbox's envVars, under each run's own", async () => {
    const sandbox = await newSandbox({ envs: { REGION: 'north', TIER: 'gold' } });
    const read = 'import os\nos.environ.get("REGION") + "/" + os.environ.get("TIER")';
    expect((await sandbox.runCode(read)).text).toBe('north/gold');
    expect((await sandbox.runCode(read, { envs: { TIER: 'silver' } })).text).toBe('north/silver');
    expect((await sandbox.runCode(read)).text).toBe('north/gold');
    expect((await sandbox.runCode('echo "$REGION"', { language: 'bash' })).logs.stdout).toEqual(['north\n']);
  });
});

describe('contexts', () => {
  it('creates, lists, runs in, restarts and removes a context', async () => {
    const sandbox = await newSandbox();
    const context = await sandbox.createCodeContext({ language: 'python' });
    expect(context).toMatchObject({ language: 'python', cwd: '/home/user' });
    expect((await sandbox.listCodeContexts()).map((listed) => listed.id)).toContain(context.id);

    // It works in /home/user, the same files as the default context's /mnt/data.
    await sandbox.runCode('open("note.txt", "w").write("shared")');
    expect((await sandbox.runCode('import os\nos.getcwd(), open("note.txt").read()', { context })).text).toBe(
      "('/home/user', 'shared')",
    );
    await sandbox.runCode('secret = 7', { context });
    expect((await sandbox.runCode('secret * 6', { context })).text).toBe('42');
    // The default context is another kernel.
    expect((await sandbox.runCode('"secret" in globals()')).text).toBe('False');

    await sandbox.restartCodeContext(context);
    expect((await sandbox.runCode('secret', { context })).error?.name).toBe('NameError');

    // A restarted default context works in /home/user again.
    await sandbox.restartCodeContext('python');
    expect((await sandbox.runCode('import os\nos.getcwd()')).text).toBe('/home/user');

    await sandbox.removeCodeContext(context.id);
    expect((await sandbox.listCodeContexts()).map((listed) => listed.id)).not.toContain(context.id);
    await expect(sandbox.runCode('1', { context })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('makes contexts of every language, in the working directory asked for', async () => {
    const sandbox = await newSandbox();
    const javascript = await sandbox.createCodeContext({ language: 'js', cwd: '/tmp' });
    expect(javascript).toMatchObject({ language: 'javascript', cwd: '/tmp' });
    expect((await sandbox.runCode('process.cwd()', { context: javascript })).text).toBe('/tmp');
    const r = await sandbox.createCodeContext({ language: 'r' });
    expect((await sandbox.runCode('6 * 7', { context: r })).text).toBe('[1] 42');
    await expect(sandbox.createCodeContext({ language: 'cobol' })).rejects.toThrow(/400/);
  });
});

describe('interrupts and refusals', () => {
  it("interrupts the code when the client's timeoutMs closes the request, keeping the sandbox and its state", async () => {
    const sandbox = await newSandbox();
    await sandbox.runCode('kept = "still here"');
    await expect(sandbox.runCode('import time\ntime.sleep(600)', { timeoutMs: 1_500 })).rejects.toBeInstanceOf(
      TimeoutError,
    );
    // Were the sleep not interrupted, this would wait behind it for ten minutes.
    expect((await sandbox.runCode('kept')).text).toBe('still here');
  });

  it('refuses requests without the sandbox token, with a wrong one, and bad bodies', async () => {
    const sandbox = await newSandbox();
    const canary = await interpreterRequest(sandbox, '/execute', JSON.stringify({ code: '1 + 1' }));
    expect(canary.status).toBe(200);
    expect(await canary.text()).toContain('"text":"2"');

    const code = JSON.stringify({ code: 'open("ran", "w").close()' });
    const withoutTokens = await interpreterRequest(sandbox, '/execute', code, {
      'e2b-traffic-access-token': '',
      'x-access-token': '',
    });
    expect(withoutTokens.status).toBe(401);
    const wrong = await interpreterRequest(sandbox, '/execute', code, { 'e2b-traffic-access-token': 'f'.repeat(64) });
    expect(wrong.status).toBe(401);
    const contexts = await interpreterRequest(sandbox, '/contexts', '{"language":"python"}', {
      'e2b-traffic-access-token': '',
      'x-access-token': '',
    });
    expect(contexts.status).toBe(401);
    expect((await sandbox.runCode('import os\nos.path.exists("ran")')).text).toBe('False');

    expect((await interpreterRequest(sandbox, '/execute', '{"code":')).status).toBe(400);
    expect((await interpreterRequest(sandbox, '/execute', '{"code": 5}')).status).toBe(400);
    const both = await interpreterRequest(
      sandbox,
      '/execute',
      '{"code":"1","context_id":"python","language":"python"}',
    );
    expect(both.status).toBe(400);
    const unknown = await interpreterRequest(sandbox, '/execute', '{"code":"1","context_id":"nope"}');
    expect(unknown.status).toBe(404);
    const tooMuchCode = await interpreterRequest(
      sandbox,
      '/execute',
      JSON.stringify({ code: `#${'x'.repeat(70_000)}` }),
    );
    expect(tooMuchCode.status).toBe(413);
    const tooManyVariables = Object.fromEntries(Array.from({ length: 65 }, (_, index) => [`V${index}`, 'x']));
    const variables = await interpreterRequest(
      sandbox,
      '/execute',
      JSON.stringify({ code: '1', env_vars: tooManyVariables }),
    );
    expect(variables.status).toBe(400);
  });
});

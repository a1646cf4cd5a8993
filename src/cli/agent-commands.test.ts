/**
 * `sandcell ask` and `sandcell chat` in-process, on their own logic: what goes
 * to stdout and stderr, the approval prompt read from input, exit codes. The
 * model is a fake provider on 127.0.0.1 spoken to by the real SDK; the kernels
 * answer from a script. The commands as a process, on a real sandbox, are in
 * test/agents-cli.test.ts.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { type FakeProvider, startFakeAnthropic, startFakeOpenAI } from '../../test/support/fake-providers.js';
import { byCode, codeRun, figure, printed, raised } from '../../test/support/kernel-script.js';
import { toolResults } from '../../test/support/wire.js';
import { createScriptedBackend, type ExecuteScript } from '../backends/scripted/index.js';
import type { CommandScript } from '../backends/scripted/script.js';
import type { AgentCommandOptions } from './agent-flags.js';
import { askCommand } from './ask-command.js';
import { chatCommand } from './chat-command.js';
import type { CommandIo } from './command-io.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const trafficCsv = path.join(root, 'examples', 'traffic-accidents', 'traffic_accidents.csv');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-agent-commands-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

/** No keys, endpoints or config files from the machine running the tests. */
function cleanEnvironment(): void {
  for (const name of [
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'ANTHROPIC_API_KEY',
    'ANTHROPIC_BASE_URL',
    'AZURE_OPENAI_API_KEY',
    'AZURE_OPENAI_ENDPOINT',
    'SANDCELL_PROVIDER',
    'SANDCELL_MODEL',
    'SANDCELL_CONFIG',
  ])
    vi.stubEnv(name, '');
  vi.stubEnv('XDG_CONFIG_HOME', workspace);
  vi.stubEnv('NO_COLOR', '1');
}

/** A command's streams: `input` on stdin, and what it wrote to stdout and stderr. */
function commandIo(input: string, execute: ExecuteScript, command?: CommandScript) {
  const written = { stdout: '', stderr: '' };
  const sink = (name: 'stdout' | 'stderr') => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      written[name] += chunk.toString();
    });
    // Neither is a terminal: no spinner, no colours, as when the output is piped.
    return stream as unknown as NodeJS.WriteStream;
  };
  const backend = createScriptedBackend({ execute, ...(command ? { command } : {}) });
  const io: CommandIo = { stdin: PassThrough.from([input]), stdout: sink('stdout'), stderr: sink('stderr'), backend };
  return { io, written, backend };
}

function agentOptions(options: Partial<AgentCommandOptions>): AgentCommandOptions {
  return { data: [], outputDir: path.join(workspace, 'unused-output'), ...options };
}

const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });

describe('sandcell ask and chat, in-process', () => {
  let provider: FakeProvider | undefined;
  afterEach(async () => {
    vi.unstubAllEnvs();
    await provider?.close();
    provider = undefined;
  });

  it('ask: prints the answer on stdout and progress, code and output on stderr; exits 1 when it gives up', async () => {
    cleanEnvironment();
    provider = await startFakeAnthropic([
      { text: 'Let me parse it.', toolCalls: [run('raise ValueError("bad data")')] },
      { toolCalls: [run('raise ValueError("still bad")')] },
      { text: 'The data could not be parsed.' },
    ]);
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-test');
    vi.stubEnv('ANTHROPIC_BASE_URL', provider.baseURL);
    const { io, written } = commandIo(
      '',
      byCode({
        'raise ValueError("bad data")': [raised('ValueError', 'bad data')],
        'raise ValueError("still bad")': [raised('ValueError', 'still bad')],
      }),
    );
    const code = await askCommand(
      'Parse it.',
      agentOptions({ provider: 'anthropic', maxAttempts: '2', model: 'claude-test' }),
      io,
    );
    expect(code).toBe(1);
    expect(written.stdout).toBe('The data could not be parsed.\n');
    expect(written.stderr).toContain('Let me parse it.\n── code (attempt 1/2) ──');
    expect(written.stderr).toContain('ValueError: still bad');
    expect(written.stderr).toContain('[gave up: the code failed 2 times in a row]');
    expect(provider.requests[0]!.headers['x-api-key'] ?? provider.requests[0]!.headers.authorization).toMatch(
      /sk-test/,
    );
  });

  it('chat --approve: a shell command shows as $ command and asks "Run this command?"; skipped, then run', async () => {
    cleanEnvironment();
    const shell = (command: string) => ({ name: 'run_shell_command', arguments: { command } });
    provider = await startFakeOpenAI([
      { toolCalls: [shell('rm -rf /mnt/data/*')] },
      { toolCalls: [shell('ls /mnt/data')] },
      { text: 'Listed.' },
    ]);
    const commandsRun: string[] = [];
    const { io, written } = commandIo(
      ['List the files', 's', 'r', 'exit', ''].join('\n'),
      byCode({}),
      ({ command }) => {
        commandsRun.push(command);
        return [{ type: 'stdout', text: 'notes.txt\n' }];
      },
    );
    const code = await chatCommand(agentOptions({ approve: true, baseUrl: provider.baseURL, model: 'm' }), io);
    expect(code).toBe(0);
    const out = written.stdout;
    expect(out).toContain('── shell command (attempt 1/3) ──\n$ rm -rf /mnt/data/*\n');
    expect(out).toContain('Run this command? [r]un, [s]kip, [e]dit: ');
    expect(out).toContain('[skipped: the model is told you declined]');
    expect(out).toContain('$ ls /mnt/data\n');
    expect(out).toContain('notes.txt');
    expect(commandsRun).toEqual(['ls /mnt/data']);
  });

  it('chat --approve: run, skip and edit, then exit', async () => {
    cleanEnvironment();
    const countRows = 'rows = len(open("traffic_accidents.csv").read().splitlines()) - 1\nprint("rows:", rows)';
    const plot = 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()';
    provider = await startFakeOpenAI([
      { toolCalls: [run(countRows)] },
      { toolCalls: [run('open("skipped.txt", "w").write("should not exist")')] },
      { toolCalls: [run('print("original")')] },
      { text: 'There are 8756 rows.' },
      { toolCalls: [run(plot)] },
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
    const { io, written, backend } = commandIo(
      input,
      byCode({
        // Counts the lines of the file the chat copied in, and keeps `rows` for the next run.
        [countRows]: ({ files, state }) => {
          const rows = files.read('traffic_accidents.csv').toString().trim().split('\n').length - 1;
          state.set('rows', rows);
          return [printed(`rows: ${rows}\n`)];
        },
        'print("edited", rows)': ({ state }) => [printed(`edited ${state.get('rows')}\n`)],
        [plot]: [figure()],
      }),
    );
    const code = await chatCommand(
      agentOptions({ data: [trafficCsv], approve: true, baseUrl: provider.baseURL, model: 'm', outputDir }),
      io,
    );
    expect(written.stderr).toBe('');
    expect(code).toBe(0);
    const out = written.stdout;
    expect(out).toContain('sandcell chat · openai m');
    expect(out).toContain('loaded');
    expect(out).toContain('(8756 rows × 10 columns)');
    expect(out).toContain('rows: 8756');
    expect(out).toContain('[skipped: the model is told you declined]');
    expect(out).toContain('edited 8756');
    expect(out).toContain('There are 8756 rows.');
    expect(out).toContain('Here is the chart.');
    const figureFile = path.join(outputDir, 'figure-1.png');
    // Outside the working directory, the saved path is shown whole.
    expect(out).toContain(`[figure saved to ${figureFile}]`);
    expect(readFileSync(figureFile).subarray(1, 4).toString()).toBe('PNG');
    expect(existsSync(path.join(outputDir, 'skipped.txt'))).toBe(false);
    expect(codeRun(backend)).toEqual([countRows, 'print("edited", rows)', plot]);
    const results = toolResults('openai', provider.requests[3]!);
    expect(results[1]!.content).toContain('The user declined to run this code');
    expect(results[2]!.content).toContain('The user edited the code before running it');
    expect(provider.remaining).toBe(0);
  });

  it('chat ends at the end of input, and reads a context file', async () => {
    cleanEnvironment();
    provider = await startFakeOpenAI([{ text: 'Hello.' }]);
    const context = path.join(workspace, 'columns.md');
    writeFileSync(context, 'accidents: number of recorded accidents\n');
    const { io, written } = commandIo('hi\n', byCode({}));
    const code = await chatCommand(agentOptions({ context, baseUrl: provider.baseURL, model: 'm' }), io);
    expect(code).toBe(0);
    expect(written.stdout).toContain('Hello.');
    expect(provider.requests[0]!.body.messages[0].content).toContain('accidents: number of recorded accidents');
  });
});

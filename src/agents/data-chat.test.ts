/**
 * The agents' own logic on the scripted model and the scripted backend: the
 * model replays a scripted conversation and records what it was sent, and
 * each run of the code it writes is answered by a kernel script. How the
 * OpenAI and Anthropic adapters put requests on the wire is tested in
 * src/agents/providers/chat-models.test.ts; the reference scenario through
 * both adapters, on real pandas in a real sandbox, is in test/agents.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  type Answer,
  assign,
  byCode,
  codeRun,
  figure,
  PNG,
  printed,
  raised,
  recall,
  value,
  writes,
} from '../../test/support/kernel-script.js';
import { createScriptedBackend } from '../backends/scripted/index.js';
import type { CommandScript } from '../backends/scripted/script.js';
import { type AgentEvent, type ApprovalRequest, DataChat, type DataChatOptions } from './index.js';
import { type ScriptedChatCall, ScriptedChatModel, type ScriptedChatResponse } from './scripted-chat-model.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const trafficCsv = path.join(root, 'examples', 'traffic-accidents', 'traffic_accidents.csv');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-agents-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

const run = (code: string, id?: string) => ({
  name: 'execute_python_code',
  arguments: { code },
  ...(id ? { id } : {}),
});

/** `n += 1` and the like: adds `amount` to a number the kernel holds. */
const increment =
  (name: string, amount: number): Answer =>
  ({ state }) => {
    state.set(name, String(Number(state.get(name)) + amount));
    return [];
  };

/** The tool results a call sent, in order. */
function toolResults(call: ScriptedChatCall): { id: string; content: string; isError: boolean }[] {
  return call.messages.flatMap((message) =>
    message.role === 'tool'
      ? [{ id: message.toolCallId, content: message.content, isError: message.isError === true }]
      : [],
  );
}

/** The ids of the tool calls the assistant turns of a call carry, in order. */
function toolCallIds(call: ScriptedChatCall): string[] {
  return call.messages.flatMap((message) =>
    message.role === 'assistant' ? (message.toolCalls ?? []).map((toolCall) => toolCall.id) : [],
  );
}

describe('agents', () => {
  let chat: DataChat | undefined;

  afterEach(async () => {
    await chat?.close();
    chat = undefined;
  });

  async function startChat(
    script: ScriptedChatResponse[],
    kernel: Record<string, Answer>,
    options: Partial<DataChatOptions> = {},
    command?: CommandScript,
  ) {
    const model = new ScriptedChatModel({ responses: script });
    const events: AgentEvent[] = [];
    const backend = createScriptedBackend({ execute: byCode(kernel), ...(command ? { command } : {}) });
    chat = await DataChat.create({
      model,
      onEvent: (event) => events.push(event),
      sessionOptions: { backend },
      ...options,
    });
    return { chat, events, model, backend };
  }

  it('reads the traffic data, runs the code the model wrote, and answers from its output', async () => {
    const code =
      'import pandas as pd\ndf = pd.read_csv("/mnt/data/traffic_accidents.csv")\nprint(df.shape)\nprint(round(df.corr()["accidents"]["traffic_fine_amount"], 4))';
    const { chat, events, model } = await startChat(
      [
        { text: 'Let me compute that.', toolCalls: [run(code)] },
        { text: 'Higher fines go with fewer accidents (r = -0.745).' },
      ],
      {
        // Counts the rows of the file the agent copied in: the run sees the session's data.
        [code]: ({ files }) => {
          const lines = files.read('traffic_accidents.csv').toString().trim().split('\n');
          return [printed(`(${lines.length - 1}, ${lines[0]!.split(',').length})\n-0.7452\n`)];
        },
      },
      { data: [trafficCsv], context: 'accidents: number of recorded accidents.' },
    );
    expect(chat.loaded).toHaveLength(1);
    expect(chat.loaded[0]).toMatchObject({ sessionPath: '/mnt/data/traffic_accidents.csv', rows: 8756, format: 'csv' });
    const answer = await chat.ask('Do fines reduce accidents?');
    expect(answer).toMatchObject({
      stopReason: 'answer',
      steps: 2,
      text: 'Higher fines go with fewer accidents (r = -0.745).',
    });
    expect(answer.executions).toHaveLength(1);
    expect(answer.executions[0]!.execution!.stdout).toBe('(8756, 10)\n-0.7452\n');
    expect(answer.usage.inputTokens).toBeGreaterThan(0);

    const [first, second] = model.calls;
    const prompt = first!.instructions;
    expect(prompt).toContain('/mnt/data/traffic_accidents.csv');
    expect(prompt).toContain('8756 rows × 10 columns');
    expect(prompt).toMatch(/traffic_lights\s+float64/);
    expect(prompt).toMatch(/accidents\s+int64/);
    expect(prompt).toContain('accidents: number of recorded accidents.');
    expect(first!.tools.map((tool) => tool.name)).toEqual(['execute_python_code', 'run_shell_command']);
    const [result] = toolResults(second!);
    expect(result!.content).toContain('Status: ok');
    expect(result!.content).toContain('-0.7452');
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining([
        'file-loaded',
        'step-start',
        'code-ready',
        'execution-start',
        'stdout-delta',
        'execution-end',
        'answer-delta',
        'answer-end',
      ]),
    );
    const deltas = events.flatMap((event) => (event.type === 'answer-delta' ? [event.text] : [])).join('');
    expect(deltas).toContain('Higher fines go with fewer accidents');
  });

  it('runs every tool call of one response in order and answers each call id', async () => {
    const { chat, model, backend } = await startChat(
      [
        { toolCalls: [run('x = 21', 'call_a'), run('print(x * 2)', 'call_b'), run('y = x + 1\ny', 'call_c')] },
        { text: 'x doubled is 42.' },
      ],
      {
        'x = 21': assign('x', '21'),
        // Each needs the one before it to have run.
        'print(x * 2)': ({ state }) =>
          state.has('x')
            ? [printed(`${Number(state.get('x')) * 2}\n`)]
            : [raised('NameError', "name 'x' is not defined")],
        'y = x + 1\ny': ({ state }) =>
          state.has('x')
            ? [value(String(Number(state.get('x')) + 1))]
            : [raised('NameError', "name 'x' is not defined")],
      },
    );
    const answer = await chat.ask('What is 21 doubled?');
    expect(answer.executions.map((record) => record.status)).toEqual(['ok', 'ok', 'ok']);
    expect(codeRun(backend)).toEqual(['x = 21', 'print(x * 2)', 'y = x + 1\ny']);
    const results = toolResults(model.calls[1]!);
    expect(results.map((result) => result.id)).toEqual(['call_a', 'call_b', 'call_c']);
    expect(toolCallIds(model.calls[1]!)).toEqual(['call_a', 'call_b', 'call_c']);
    expect(results[1]!.content).toContain('stdout:\n42');
    expect(results[2]!.content).toContain('Result:\n22');
  });

  it('sends the traceback back and runs the fixed second attempt', async () => {
    const { chat, model, events } = await startChat(
      [
        { toolCalls: [run('import math\nprint(math.sqrt(undefined_value))')] },
        { toolCalls: [run('import math\nprint(math.sqrt(16))')] },
        { text: 'The square root of 16 is 4.' },
      ],
      {
        'import math\nprint(math.sqrt(undefined_value))': [
          raised('NameError', "name 'undefined_value' is not defined"),
        ],
        'import math\nprint(math.sqrt(16))': [printed('4.0\n')],
      },
    );
    const answer = await chat.ask('sqrt of 16?');
    expect(answer.stopReason).toBe('answer');
    expect(answer.executions.map((record) => [record.status, record.attempt])).toEqual([
      ['error', 1],
      ['ok', 2],
    ]);
    const [failed] = toolResults(model.calls[1]!);
    expect(failed!.isError).toBe(true);
    expect(failed!.content).toContain("NameError: name 'undefined_value' is not defined");
    expect(failed!.content).toContain('Attempt 1 of 3 failed');
    expect(toolResults(model.calls[2]!)[1]!.content).toContain('4.0');
    const codeReady = events.filter((event) => event.type === 'code-ready');
    expect(codeReady.map((event) => event.type === 'code-ready' && event.attempt)).toEqual([1, 2]);
  });

  it('gives up clearly after three failures in a row', async () => {
    const { chat, model } = await startChat(
      [
        { toolCalls: [run('1 / 0')] },
        { toolCalls: [run('int("x")')] },
        { toolCalls: [run('[][1]')] },
        { text: 'I could not compute it: every attempt failed.' },
      ],
      {
        '1 / 0': [raised('ZeroDivisionError', 'division by zero')],
        'int("x")': [raised('ValueError', "invalid literal for int() with base 10: 'x'")],
        '[][1]': [raised('IndexError', 'list index out of range')],
      },
    );
    const answer = await chat.ask('Compute it.');
    expect(answer.stopReason).toBe('gave-up');
    expect(answer.text).toBe('I could not compute it: every attempt failed.');
    expect(answer.executions.map((record) => record.status)).toEqual(['error', 'error', 'error']);
    expect(model.calls).toHaveLength(4);
    const last = toolResults(model.calls[3]!);
    expect(last.map((result) => result.content.match(/(ZeroDivisionError|ValueError|IndexError)/)?.[1])).toEqual([
      'ZeroDivisionError',
      'ValueError',
      'IndexError',
    ]);
    expect(last[2]!.content).toContain('Attempt 3 of 3 failed, and no attempts are left');
    // The last call offers no tools: the model must answer in words.
    expect(model.calls.slice(0, 3).map((request) => request.toolChoice)).toEqual(['auto', 'auto', 'auto']);
    expect(model.calls[3]!.toolChoice).toBe('none');
  });

  it('reports a declined execution to the model and never runs it; runs an edited one', async () => {
    const decisions = [{ action: 'skip' as const }, { action: 'edit' as const, code: 'print("edited", 6 * 7)' }];
    const declinedCode = 'open("/mnt/data/declined.txt", "w").write("ran")';
    const { chat, model, events, backend } = await startChat(
      [{ toolCalls: [run(declinedCode)] }, { toolCalls: [run('print("original")')] }, { text: 'Done.' }],
      {
        [declinedCode]: writes('declined.txt', 'ran', value('3')),
        'print("original")': [printed('original\n')],
        'print("edited", 6 * 7)': [printed('edited 42\n')],
      },
      { approve: () => decisions.shift()! },
    );
    const answer = await chat.ask('Write a file.');
    expect(answer.executions.map((record) => record.status)).toEqual(['declined', 'ok']);
    expect((await chat.session.files.list()).map((entry) => entry.path)).not.toContain('declined.txt');
    expect(codeRun(backend)).toEqual(['print("edited", 6 * 7)']);
    const [declined] = toolResults(model.calls[1]!);
    expect(declined!.content).toContain('The user declined to run this code, so it was not executed.');
    const edited = toolResults(model.calls[2]!)[1]!;
    expect(edited.content).toContain('The user edited the code before running it');
    expect(edited.content).toContain('edited 42');
    expect(answer.executions[1]!.editedCode).toBe('print("edited", 6 * 7)');
    expect(events.some((event) => event.type === 'execution-skipped' && event.reason === 'declined')).toBe(true);
  });

  it('runs run_shell_command only once approved: a refused command never runs, a granted one reports its exit code', async () => {
    const shell = (command: string) => ({ name: 'run_shell_command', arguments: { command } });
    const decisions = [{ action: 'skip' as const }, { action: 'run' as const }];
    const requests: ApprovalRequest[] = [];
    const commandsRun: string[] = [];
    const { chat, model, events } = await startChat(
      [
        { toolCalls: [shell('rm -rf /mnt/data/*')] },
        { toolCalls: [shell('wc -l notes.txt')] },
        { text: 'Three lines.' },
      ],
      {},
      {
        approve: (request) => {
          requests.push(request);
          return decisions.shift()!;
        },
      },
      ({ command }) => {
        commandsRun.push(command);
        return [
          { type: 'stdout', text: '3 notes.txt\n' },
          { type: 'stderr', text: 'wc: a warning\n' },
          { type: 'exit', code: 3 },
        ];
      },
    );
    const answer = await chat.ask('How many lines has notes.txt?');
    expect(requests.map((request) => [request.language, request.code])).toEqual([
      ['shell', 'rm -rf /mnt/data/*'],
      ['shell', 'wc -l notes.txt'],
    ]);
    // The refused command never reached the sandbox.
    expect(commandsRun).toEqual(['wc -l notes.txt']);
    expect(answer.executions.map((record) => [record.language, record.status])).toEqual([
      ['shell', 'declined'],
      ['shell', 'error'],
    ]);
    const [declined] = toolResults(model.calls[1]!);
    expect(declined!.content).toContain('The user declined to run this command, so it was not executed.');
    const ran = toolResults(model.calls[2]!)[1];
    expect(ran!.content).toContain('Status: error (exit code 3');
    expect(ran!.content).toContain('3 notes.txt');
    expect(ran!.content).toContain('wc: a warning');
    expect(ran!.content).toContain('The command exited with code 3.');
    const shellEvents = events.filter(
      (event) => event.type === 'code-ready' || event.type === 'execution-start' || event.type === 'execution-skipped',
    );
    expect(shellEvents.map((event) => [event.type, 'language' in event ? event.language : undefined])).toEqual([
      ['code-ready', 'shell'],
      ['execution-skipped', 'shell'],
      ['code-ready', 'shell'],
      ['execution-start', 'shell'],
    ]);
  });

  it('caps what a shell command sends back to the model like code output', async () => {
    const { chat, model } = await startChat(
      [{ toolCalls: [{ name: 'run_shell_command', arguments: { command: 'seq 100000' } }] }, { text: 'Long.' }],
      {},
      { maxToolOutputChars: 2_000 },
      () => [{ type: 'stdout', text: `${'0123456789\n'.repeat(20_000)}` }],
    );
    await chat.ask('Count.');
    const [result] = toolResults(model.calls[1]!);
    expect(result!.content.length).toBeLessThanOrEqual(2_000);
    expect(result!.content).toMatch(/characters cut/);
    expect(result!.content).toContain('Status: ok (exit code 0');
  });

  it('stops at maxSteps and asks for an answer without tools', async () => {
    const { chat, model } = await startChat(
      [
        { toolCalls: [run('n = 1')] },
        { toolCalls: [run('n += 1')] },
        // Told not to, it calls a tool anyway: the call is answered, not run.
        { text: 'So far n is 2.', toolCalls: [run('n += 100')] },
      ],
      { 'n = 1': assign('n', '1'), 'n += 1': increment('n', 1), 'n += 100': increment('n', 100), n: recall('n') },
      { maxSteps: 2 },
    );
    const answer = await chat.ask('Count.');
    expect(answer).toMatchObject({ stopReason: 'max-steps', steps: 3, text: 'So far n is 2.' });
    expect(model.calls.map((request) => request.toolChoice)).toEqual(['auto', 'auto', 'none']);
    expect(answer.executions).toHaveLength(2);
    expect((await chat.session.run('n')).results[0]!.data['text/plain']).toBe('2');
    // The history stays valid: the next question sends an answer for every call.
    model.enqueue({ text: 'ok' });
    await chat.ask('And now?');
    const followUp = model.calls[model.calls.length - 1]!;
    expect(toolCallIds(followUp)).toEqual(toolResults(followUp).map((result) => result.id));
  });

  it('hands malformed tool-call JSON back to the model as a tool error', async () => {
    const { chat, model, backend } = await startChat(
      [
        { toolCalls: [{ name: 'execute_python_code', arguments: '{"code": "print(1)"' }] },
        { toolCalls: [{ name: 'execute_python_code', arguments: { script: 'print(1)' } }] },
        { toolCalls: [run('print("valid now")')] },
        { text: 'Fixed.' },
      ],
      { 'print(1)': [printed('1\n')], 'print("valid now")': [printed('valid now\n')] },
    );
    const answer = await chat.ask('Print 1.');
    expect(answer.stopReason).toBe('answer');
    expect(answer.executions.map((record) => record.status)).toEqual(['ok']);
    expect(codeRun(backend)).toEqual(['print("valid now")']);
    const [invalid] = toolResults(model.calls[1]!);
    expect(invalid!.content).toContain('not valid JSON');
    expect(invalid!.content).toContain('Nothing was run');
    const schema = toolResults(model.calls[2]!)[1]!;
    expect(schema.content).toContain('do not match its schema');
    expect(schema.content).toContain('code');
    expect(toolResults(model.calls[3]!)[2]!.content).toContain('valid now');
  });

  it('describes charts by file name and size, never as base64, and saves them on the host', async () => {
    const outputDir = path.join(workspace, 'charts');
    const code = [
      'import matplotlib.pyplot as plt',
      'plt.figure(figsize=(4, 3))',
      'plt.plot([1, 2, 3], [2, 4, 8])',
      'plt.savefig("growth.png")',
      'plt.show()',
      'print("x" * 30000)',
    ].join('\n');
    const { chat, model, events } = await startChat(
      [{ toolCalls: [run(code)] }, { text: 'See the chart.' }],
      { [code]: writes('growth.png', PNG, figure(), printed(`${'x'.repeat(30000)}\n`)) },
      { outputDir },
    );
    const answer = await chat.ask('Plot it.');
    const report = toolResults(model.calls[1]!)[0]!.content;
    expect(report).toMatch(
      /Figure shown to the user, saved as \/mnt\/data\/figure-1\.png \(PNG, \d+×\d+ px, [\d.]+ KiB\)/,
    );
    expect(report).toMatch(/Files written to \/mnt\/data: growth\.png \([\d.]+ KiB\)/);
    expect(report).toMatch(/\[… \d+ characters cut …\]/);
    expect(report.length).toBeLessThanOrEqual(8000);
    for (const call of model.calls) expect(JSON.stringify(call)).not.toContain('iVBORw0KGgo');
    expect(answer.files.map((file) => file.path).sort()).toEqual(['figure-1.png', 'growth.png']);
    for (const file of answer.files) {
      expect(file.savedTo).toBe(path.join(outputDir, file.path));
      expect(readFileSync(file.savedTo!).subarray(1, 4).toString()).toBe('PNG');
    }
    const end = events.find((event) => event.type === 'execution-end');
    expect(end?.type === 'execution-end' && end.files.length).toBe(2);
  });
});

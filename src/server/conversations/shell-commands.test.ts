/**
 * A conversation's run_shell_command goes through the server's command path,
 * like every front door's commands: it counts against the key's rate, gets
 * the server's time cap, shows in /metrics, and a graceful shutdown waits for
 * it. Scripted model, scripted commands: the subject is sandcell's own logic.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeStep, lastTurn, readEvents, sse } from '../../../test/support/conversation-events.js';
import { type Client, client, startScriptedServer } from '../../../test/support/server.js';
import { toyShell } from '../../../test/support/toy-shell.js';
import { ScriptedChatModel } from '../../agents/scripted-chat-model.js';
import type { Conversation } from '../../protocol/index.js';
import type { ServerOptions } from '../core/options.js';

type Server = Awaited<ReturnType<typeof startScriptedServer>>;

const KEY = 'shell-commands-key-0001';
const shell = (id: string, command: string) => ({ id, name: 'run_shell_command', arguments: { command } });

describe("a conversation's shell commands go through the registry", () => {
  let model: ScriptedChatModel;
  let server: Server | undefined;
  let api: Client;

  beforeEach(async () => {
    model = new ScriptedChatModel();
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(options: ServerOptions): Promise<string> {
    server = await startScriptedServer(
      undefined,
      { apiKeys: [KEY], model, webRoot: false, ...options },
      { command: toyShell },
    );
    api = client(server, KEY);
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    return `/v1/conversations/${conversation.id}`;
  }

  const metrics = async () => (await api('/metrics')).text();

  it('runs the command and counts it in /metrics', async () => {
    const base = await start({});
    model.enqueue({ toolCalls: [shell('call_echo', 'echo hello')] }, { text: 'It said hello.' });
    const turn = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'say hello' })));
    expect(turn.status).toBe('done');
    expect(codeStep(turn)).toMatchObject({ status: 'ok', language: 'shell', stdout: 'hello\n' });
    const text = await metrics();
    expect(text).toContain('sandcell_commands_total{kind="foreground",status="ok"} 1');
    expect(text).toMatch(/^sandcell_command_duration_seconds_count\{kind="foreground"\} 1$/m);
  });

  it("gets the server's maxExecutionMs as its time limit, and is killed at it", async () => {
    // The sessions' own timeout (a minute) is far longer: only the server's cap ends the command.
    const base = await start({ limits: { maxExecutionMs: 300 } });
    model.enqueue({ toolCalls: [shell('call_sleep', 'sleep')] }, { text: 'It ran too long.' });
    const turn = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'wait' })));
    expect(turn.status).toBe('done');
    expect(codeStep(turn)).toMatchObject({ status: 'timeout', stdout: 'started\n' });
    expect(await metrics()).toContain('sandcell_commands_total{kind="foreground",status="timeout"} 1');
  });

  it("is refused past the key's rate limit: the turn ends with HTTP's code for it, and a hint", async () => {
    const base = await start({ limits: { executionsPerMinute: 2 } });
    model.enqueue(
      { toolCalls: [shell('call_1', 'echo one'), shell('call_2', 'echo two'), shell('call_3', 'echo three')] },
      { text: 'never asked for' },
    );
    const turn = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'three commands' })));
    expect(turn.status).toBe('error');
    // The same refusal over HTTP is 429 `rate-limited`; the stream has no Retry-After, the message says when.
    expect(turn.error).toMatchObject({
      code: 'rate-limited',
      message: expect.stringMatching(/per minute.*retry in \d+ s/),
    });
    expect(turn.error?.message).toContain('--executions-per-minute');
    const ran = turn.steps.filter((step) => step.type === 'code' && step.status === 'ok');
    expect(ran).toHaveLength(2);
    expect(await metrics()).toContain('sandcell_requests_rejected_total{reason="executions-per-minute"} 1');
  });

  it('graceful shutdown waits for a running command before it closes the sessions', async () => {
    const base = await start({ shutdownGraceMs: 60_000 });
    model.enqueue({ toolCalls: [shell('call_pause', 'pause 600')] }, { text: 'Rested.' });
    const turn = sse(api, `${base}/messages`, { content: 'rest a while' }).then(readEvents).then(lastTurn);
    await expect
      .poll(async () => (await api.json<Conversation>(base)).turns[0]?.steps[0]?.type === 'code', { timeout: 10_000 })
      .toBe(true);
    const closing = server!.close();
    const ended = await turn;
    await closing;
    server = undefined;
    expect(codeStep(ended)).toMatchObject({ status: 'ok', stdout: 'rested\n' });
  });
});

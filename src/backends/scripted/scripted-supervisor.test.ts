/**
 * The scripted supervisor against the supervisor contract's protocol cases
 * (test/contract/supervisor-protocol-cases.ts), the same cases the real supervisor
 * passes in every real sandbox; the code they run is answered here as Python
 * and bash would answer it. And the compiler's side: the fake can only send
 * what the real protocol has.
 */
import { describe, expect, it } from 'vitest';
import {
  PROTOCOL_CASE_CODE as CODE,
  runSupervisorProtocolCases,
} from '../../../test/contract/supervisor-protocol-cases.js';
import { assign, byCode, printed, recall, value } from '../../../test/support/kernel-script.js';
import type { CommandScript } from './index.js';
import { createScriptedBackend } from './index.js';
import type { ScriptedKernelOptions } from './scripted-kernel.js';
import type { ScriptedSupervisorOptions } from './scripted-supervisor.js';

const commands: CommandScript = ({ command }) =>
  command === CODE.failingCommand
    ? [
        { type: 'stdout', text: 'out\n' },
        { type: 'stderr', text: 'err\n' },
        { type: 'exit', code: 3 },
      ]
    : [
        { type: 'stderr', text: `${command}: command not found\n` },
        { type: 'exit', code: 127 },
      ];

runSupervisorProtocolCases({
  name: 'scripted',
  createBackend: () =>
    createScriptedBackend({
      execute: byCode({
        [CODE.spin]: [printed('spinning\n'), { type: 'hang' }],
        [CODE.setShared]: assign('shared', "'first'"),
        [CODE.readShared]: recall('shared'),
        [CODE.workingDirectory]: ({ cwd }) => [value(`'${cwd}'`)],
        [CODE.setKept]: assign('kept', '1'),
        [CODE.readKept]: recall('kept'),
        [CODE.one]: [value('1')],
      }),
      command: commands,
    }),
});

describe('the scripted sandbox speaks only the real protocol', () => {
  it('refuses, at compile time, an event or a field the real protocol does not have', () => {
    const sent: unknown[] = [];
    const kernelSend: ScriptedKernelOptions['send'] = (message) => sent.push(message);
    const supervisorSend: ScriptedSupervisorOptions['send'] = (message) => sent.push(message);

    kernelSend({ type: 'stream', id: 'e1', name: 'stdout', text: 'hello\n' });
    // @ts-expect-error: no kernel of the real protocol sends a `progress` event.
    kernelSend({ type: 'progress', id: 'e1', percent: 50 });
    // @ts-expect-error: a stream has no `color`.
    kernelSend({ type: 'stream', id: 'e1', name: 'stdout', text: 'hello\n', color: 'red' });
    // @ts-expect-error: an execution's end says its status.
    kernelSend({ type: 'execution-end', id: 'e1', executionCount: 1, outputTruncated: false });
    // @ts-expect-error: a result says which run it is the value of.
    kernelSend({ type: 'result', id: 'e1', data: { 'text/plain': '1' }, metadata: {} });
    // @ts-expect-error: a reply to ping carries nothing beside `ok` (in a reply a kernel sends).
    kernelSend({ type: 'reply', id: 'r1', ok: true, pong: true });
    // @ts-expect-error: context-exit is the supervisor's, and says how the kernel ended.
    supervisorSend({ type: 'context-exit', context: 'python', reason: 'crashed' });
    // @ts-expect-error: a command's end has no `status`: its exit code is the data.
    supervisorSend({ type: 'command-end', id: 'c1', exitCode: 0, signal: null, outputTruncated: false, status: 'ok' });

    // The calls run; what they show is the compiler's refusals above.
    expect(sent).toHaveLength(8);
  });
});

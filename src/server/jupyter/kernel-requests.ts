/**
 * The shell requests other than execute: what each answers, from the kernel's
 * spec, its session (the kernel's own rules for is_complete) and its history.
 * Undefined for a request sandcell does not know: the caller answers it with an error.
 */
import type { ManagedSession } from '../core/managed-session.js';
import type { KernelHistory } from './kernel-history.js';
import type { KernelSpecDefinition } from './kernel-specs.js';
import { type JupyterMessage, PROTOCOL_VERSION } from './wire-message.js';

/** What these answers read of their kernel (JupyterKernel is one): its session, context, spec and history. */
export interface ShellKernel {
  /** Its session, resumed first when the server paused it: only the requests that ask the kernel itself wait for it. */
  live(): Promise<ManagedSession>;
  readonly contextId: string;
  readonly spec: KernelSpecDefinition;
  readonly history: KernelHistory;
  /** sandcell's version, which kernel_info_reply gives as the implementation's. */
  readonly serverVersion: string;
}

export async function answerShellRequest(
  kernel: ShellKernel,
  message: JupyterMessage,
): Promise<Record<string, unknown> | undefined> {
  const { content } = message;
  switch (message.header.msg_type) {
    case 'kernel_info_request':
      return kernelInfo(kernel);
    case 'is_complete_request': {
      const code = typeof content.code === 'string' ? content.code : '';
      const answer = await (await kernel.live()).session.checkComplete(code, { context: kernel.contextId });
      return answer.status === 'incomplete'
        ? { status: 'incomplete', indent: ' '.repeat(Math.max(0, Math.min(answer.indent, 64))) }
        : { status: answer.status };
    }
    case 'complete_request': {
      const code = typeof content.code === 'string' ? content.code : '';
      const completion = await (await kernel.live()).session.complete(code, cursorPosition(content, code), {
        context: kernel.contextId,
      });
      return {
        status: 'ok',
        matches: completion.matches,
        cursor_start: completion.cursorStart,
        cursor_end: completion.cursorEnd,
        metadata: completion.metadata,
      };
    }
    case 'inspect_request': {
      const code = typeof content.code === 'string' ? content.code : '';
      const inspection = await (await kernel.live()).session.inspect(code, cursorPosition(content, code), {
        context: kernel.contextId,
        detailLevel: content.detail_level === 1 ? 1 : 0,
      });
      return { status: 'ok', found: inspection.found, data: inspection.data, metadata: inspection.metadata };
    }
    case 'history_request':
      return { status: 'ok', history: kernel.history.answer(content) };
    case 'comm_info_request':
      // No comm targets: widgets need a frontend-kernel channel sandcell's kernels do not have.
      return { status: 'ok', comms: {} };
    default:
      return undefined;
  }
}

/** Jupyter's cursor (code points); a client that sends none means the end of the code. */
function cursorPosition(content: Record<string, unknown>, code: string): number {
  const position = content.cursor_pos;
  return typeof position === 'number' && Number.isInteger(position) ? position : [...code].length;
}

function kernelInfo(kernel: ShellKernel): Record<string, unknown> {
  const { spec } = kernel;
  return {
    status: 'ok',
    protocol_version: PROTOCOL_VERSION,
    implementation: spec.implementation,
    implementation_version: kernel.serverVersion,
    language_info: spec.languageInfo,
    banner: `${spec.displayName}: a sandboxed kernel served by sandcell ${kernel.serverVersion}`,
    help_links: [],
  };
}

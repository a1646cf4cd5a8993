/**
 * A session's kernels asked about code without running it: whether it is a
 * complete statement, what may be typed at a cursor, and help on a name
 * (Jupyter's is_complete, complete and inspect). Each asks the live state of
 * one context, made and started on first use as for a run; what a caller may
 * pass is assist-input.ts, and how a reply is read, assist-replies.ts.
 */
import { ProtocolError } from '../errors.js';
import { type AssistOptions, checkAssistInput, type InspectOptions } from './assist-input.js';
import { type Completion, type Inspection, withinCode } from './assist-replies.js';
import type { KernelConnection } from './kernel-connection.js';
import type { KernelRequest, ReplyTo } from './kernel-protocol.js';
import type { CompletenessStatus } from './kernel-replies.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, type ResolvedSessionOptions } from './options.js';
import type { SessionContext } from './session-context.js';
import type { SessionContexts } from './session-contexts.js';

/** What the assist needs of its session. */
export interface AssistHost {
  options: Pick<ResolvedSessionOptions, 'maxCodeBytes' | 'timeoutMs' | 'interruptGraceMs'>;
  contexts: SessionContexts;
  /** Throws SessionClosedError once the session is closed. */
  checkOpen(): void;
  /** The session did something (its idle clock starts again). */
  touch(): void;
  /** A request to the sandbox (started if needed), not bound to a context's kernel. */
  request<Request extends KernelRequest>(request: Request): Promise<ReplyTo<Request>>;
  /** `context`'s kernel, started if needed. */
  live(context: SessionContext): Promise<KernelConnection>;
}

export class SessionAssist {
  constructor(private readonly host: AssistHost) {}

  /** See Session.checkComplete. */
  async checkComplete(code: string, options: AssistOptions): Promise<{ status: CompletenessStatus; indent: number }> {
    if (options.context === undefined && options.language === undefined) {
      return this.host.request({ type: 'is-complete', code: String(code) });
    }
    // Each kernel answers by its own language's rules (bash -n, R's parse, a JavaScript parser).
    const { context, connection } = await this.liveContext(options);
    return connection.request(
      { type: 'is-complete', code: String(code), context: context.id },
      DEFAULT_REQUEST_TIMEOUT_MS,
    );
  }

  /** See Session.complete. */
  async complete(code: string, cursorPos: number, options: AssistOptions): Promise<Completion> {
    checkAssistInput(code, cursorPos, options, this.host.options.maxCodeBytes);
    const { context, connection } = await this.liveContext(options);
    const reply = await connection.request(
      { type: 'complete', code, cursorPos, context: context.id },
      this.timeoutMs(),
    );
    if (!withinCode(code, reply)) throw new ProtocolError('The kernel sent completions for a span outside the code.');
    return reply;
  }

  /** See Session.inspect. */
  async inspect(code: string, cursorPos: number, options: InspectOptions): Promise<Inspection> {
    checkAssistInput(code, cursorPos, options, this.host.options.maxCodeBytes);
    const { context, connection } = await this.liveContext(options);
    return connection.request(
      { type: 'inspect', code, cursorPos, detailLevel: options.detailLevel === 1 ? 1 : 0, context: context.id },
      this.timeoutMs(),
    );
  }

  /** The context a request names (created on first use, as for run()) with its kernel up. */
  private async liveContext(
    options: AssistOptions,
  ): Promise<{ context: SessionContext; connection: KernelConnection }> {
    this.host.checkOpen();
    const context = this.host.contexts.forRun(options);
    this.host.touch();
    return { context, connection: await this.host.live(context) };
  }

  /** A completion waits behind the execution running in its context, which ends within its timeout and grace. */
  private timeoutMs(): number {
    return this.host.options.timeoutMs + this.host.options.interruptGraceMs + DEFAULT_REQUEST_TIMEOUT_MS;
  }
}

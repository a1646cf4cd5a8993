/**
 * The turn a conversation is running: how to stop it, the approvals it waits
 * for (each answered once), who listens to its events, and what each code
 * step may still keep of its output (output-budget.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApprovalDecision, ApprovalRequest } from '../../agents/python-exec-agent.js';
import type { ApprovalMode, ConversationEvent } from '../../protocol/index.js';
import { ApprovalDecidedError, ApprovalNotFoundError } from '../core/errors.js';
import { OutputBudget } from './output-budget.js';

export type TurnListener = (event: ConversationEvent) => void;

export type ApprovalAnswer =
  | { decision: 'run' }
  | { decision: 'skip'; reason?: string }
  | { decision: 'edit'; code: string };

interface PendingApproval {
  callId: string;
  resolve(decision: ApprovalDecision): void;
}

const STOPPED: ApprovalDecision = { action: 'skip', reason: 'The user stopped this turn.' };

export class RunningTurn {
  readonly abort = new AbortController();
  private readonly approvals = new Map<string, PendingApproval>();
  /** Approval ids already answered, so a second answer is a conflict rather than "not found". */
  private readonly decided = new Set<string>();
  private readonly listeners: Set<TurnListener>;
  /** What each code step (by call id) may still keep of its output. */
  private readonly budgets = new Map<string, OutputBudget>();

  constructor(
    /** Where the turn is in the conversation's turns (older turns dropped move it). */
    public index: number,
    /** Whether this turn's code waits for approval. */
    readonly approval: ApprovalMode,
    private readonly outputBytes: number,
    private readonly logger: Logger,
    listener?: TurnListener,
  ) {
    this.listeners = new Set(listener ? [listener] : []);
  }

  /**
   * The user's decision on code the model wants to run; `announce` emits the
   * approval request once it can be answered. Code runs unasked when the turn
   * does not wait for approvals, and is skipped once the turn was stopped.
   */
  requestApproval(request: ApprovalRequest, announce: (approvalId: string) => void): Promise<ApprovalDecision> {
    if (this.approval === 'auto') return Promise.resolve({ action: 'run' });
    if (this.abort.signal.aborted) return Promise.resolve(STOPPED);
    const approvalId = randomUUID();
    return new Promise((resolve) => {
      this.approvals.set(approvalId, { callId: request.callId, resolve });
      announce(approvalId);
    });
  }

  /** Answers a pending approval. */
  answer(approvalId: string, answer: ApprovalAnswer): void {
    const pending = this.approvals.get(approvalId);
    if (!pending) {
      if (this.decided.has(approvalId)) {
        throw new ApprovalDecidedError(approvalId);
      }
      throw new ApprovalNotFoundError(approvalId);
    }
    this.approvals.delete(approvalId);
    this.decided.add(approvalId);
    pending.resolve(
      answer.decision === 'run'
        ? { action: 'run' }
        : answer.decision === 'edit'
          ? { action: 'edit', code: answer.code }
          : { action: 'skip', ...(answer.reason ? { reason: answer.reason } : {}) },
    );
  }

  /** Stops the turn: interrupts its code, declines its pending approvals, stops asking the model. */
  cancel(): void {
    this.abort.abort();
    for (const [id, pending] of this.approvals) {
      this.approvals.delete(id);
      this.decided.add(id);
      pending.resolve(STOPPED);
    }
  }

  /** Hands an event to every listener; one that throws is logged, the others still hear it. */
  send(event: ConversationEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.warn({ err: error }, 'a turn listener failed');
      }
    }
  }

  /** The event as the history keeps it: output past the step's budget is cut (with a note) or left out. */
  withinBudget(event: ConversationEvent): ConversationEvent | undefined {
    switch (event.type) {
      case 'execution-start':
        this.budgets.set(event.callId, new OutputBudget(this.outputBytes));
        return event;
      case 'stdout-delta':
      case 'stderr-delta': {
        const text = this.budget(event.callId).text(event.text);
        return text === undefined ? undefined : { ...event, text };
      }
      case 'result-ready': {
        const result = this.budget(event.callId).result(event.result);
        return result ? { ...event, result } : undefined;
      }
      default:
        return event;
    }
  }

  budget(callId: string): OutputBudget {
    let budget = this.budgets.get(callId);
    if (!budget) {
      budget = new OutputBudget(this.outputBytes);
      this.budgets.set(callId, budget);
    }
    return budget;
  }
}

/**
 * A conversation's turns, one at a time: a turn is added to the history and announced
 * (`turn-start`); each of its events is folded, within its output budget, into its place in the
 * history and handed to its listeners; and it ends done, failed (its error said as an event) or
 * cancelled, with code that never ran marked skipped (`turn-end`). Code the model wants to run asks
 * the running turn for approval (running-turn.ts). Which turns may start is the conversation's say.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApprovalDecision, ApprovalRequest } from '../../agents/python-exec-agent.js';
import {
  type ApprovalMode,
  applyConversationEvent,
  type ConversationEvent,
  type SessionResumed,
  type Turn,
} from '../../protocol/index.js';
import { ApprovalNotFoundError } from '../core/errors.js';
import { type ApprovalAnswer, RunningTurn, type TurnListener } from './running-turn.js';
import { describeTurnError } from './turn-errors.js';

/** What the turns are kept in, and told to (the conversation). */
export interface TurnLoopHost {
  /** The conversation's turns: a new one is pushed, a running one replaced as its events come. */
  readonly turns: Turn[];
  /** What each code step may keep of its output. */
  readonly outputBytes: number;
  readonly logger: Logger;
  /** The conversation changed (its `updatedAt`). */
  touch(): void;
  /** A turn changed (its journal writes it). */
  turnChanged(turn: Turn): void;
  /** A turn ended: within the conversation's history bound, then the key's. */
  keepWithinLimits(): void;
}

export interface TurnStart {
  kind: Turn['kind'];
  input: string;
  listener?: TurnListener | undefined;
  approval: ApprovalMode;
  /** What the resume before this turn did not bring back, said as the turn's first event. */
  resumed?: SessionResumed | undefined;
}

export class TurnLoop {
  private current?: RunningTurn;

  constructor(private readonly host: TurnLoopHost) {}

  /** The turn running now, if one is. */
  get running(): RunningTurn | undefined {
    return this.current;
  }

  /** The running turn as the history holds it now. */
  turn(): Turn | undefined {
    return this.current ? this.host.turns[this.current.index] : undefined;
  }

  /** Starts a turn that `work` does; `done` resolves with the turn as it ended (work's failure is the turn's). */
  start(start: TurnStart, work: (running: RunningTurn) => Promise<void>): { turn: Turn; done: Promise<Turn> } {
    const { host } = this;
    const turn: Turn = {
      id: randomUUID(),
      kind: start.kind,
      createdAt: new Date().toISOString(),
      status: 'running',
      input: start.input,
      steps: [],
    };
    const running = new RunningTurn(host.turns.length, start.approval, host.outputBytes, host.logger, start.listener);
    host.turns.push(turn);
    this.current = running;
    host.touch();
    host.turnChanged(turn);
    running.send({ type: 'turn-start', turn });
    if (start.resumed) this.emit({ type: 'session-resumed', resumed: start.resumed });
    const done = (async () => {
      let status: Turn['status'] = 'done';
      try {
        await work(running);
        if (running.abort.signal.aborted) status = 'cancelled';
      } catch (error) {
        if (running.abort.signal.aborted) {
          status = 'cancelled';
        } else {
          status = 'error';
          this.emit({ type: 'error', error: describeTurnError(error, host.logger) });
        }
      }
      this.finishOpenSteps(running);
      host.turns[running.index] = { ...host.turns[running.index]!, status };
      this.current = undefined;
      host.touch();
      host.keepWithinLimits(); // may drop older turns (never this one, the newest) or outputs
      const final = host.turns[host.turns.length - 1]!;
      host.turnChanged(final);
      running.send({ type: 'turn-end', turn: final });
      return final;
    })();
    return { turn, done };
  }

  /** Folds an event, as kept within the output budget, into the running turn and hands it to the listeners. */
  emit(event: ConversationEvent): void {
    const running = this.current;
    if (!running) return;
    const kept = running.withinBudget(event);
    if (!kept) return;
    const { turns } = this.host;
    turns[running.index] = applyConversationEvent(turns[running.index]!, kept);
    this.host.touch();
    this.host.turnChanged(turns[running.index]!);
    running.send(kept);
  }

  /** The user's decision on code the model wants to run, asked with an `approval-request` event. */
  requestApproval(request: ApprovalRequest): Promise<ApprovalDecision> {
    if (!this.current) return Promise.resolve({ action: 'run' });
    return this.current.requestApproval(request, (approvalId) =>
      this.emit({ type: 'approval-request', approvalId, ...request }),
    );
  }

  /** Answers a pending approval. */
  approve(approvalId: string, answer: ApprovalAnswer): void {
    if (!this.current) throw new ApprovalNotFoundError(approvalId);
    this.current.answer(approvalId, answer);
  }

  /** Stops the running turn: interrupts code, declines pending approvals, stops asking the model. */
  cancel(): boolean {
    if (!this.current) return false;
    this.current.cancel();
    return true;
  }

  /** Code that never ran because the turn stopped is marked skipped. */
  private finishOpenSteps(running: RunningTurn): void {
    for (const step of this.host.turns[running.index]!.steps) {
      if (step.type === 'code' && (step.status === 'awaiting-approval' || step.status === 'ready')) {
        this.emit({ type: 'execution-skipped', callId: step.callId, code: step.code, reason: 'cancelled' });
      }
    }
  }
}

/**
 * What the agents and executions of a conversation's turn become in its history: the agents speak
 * the conversation's vocabulary, and what differs is presented here (results and files as links,
 * within the turn's output budget); events only a process sees stay in it.
 */
import type { AgentEvent } from '../../agents/events.js';
import type { CodeFile, ConversationEvent, ExecutionSummary, Turn } from '../../protocol/index.js';
import type { Execution, ExecutionResult } from '../../session/execution.js';
import type { ConversationLinks } from './conversation-links.js';
import { errorWithin } from './output-budget.js';
import type { RunningTurn } from './running-turn.js';

/** What the turn's events are folded into (the conversation). */
export interface TurnEventTarget {
  /** The turn running now, if one is. */
  running(): RunningTurn | undefined;
  /** The running turn as its history holds it now. */
  turn(): Turn | undefined;
  /** Folds an event, as kept within the output budget, into the running turn and hands it to the listeners. */
  emit(event: ConversationEvent): void;
  readonly links: ConversationLinks;
  /** The most an error's text may take (the conversation's output bound). */
  readonly outputBytes: number;
  /** Within the conversation's history bound, then the key's. */
  keepWithinLimits(): void;
}

export class TurnEvents {
  constructor(private readonly target: TurnEventTarget) {}

  /** A streamed result; one past the budget is not even stored (its images would only take room). */
  result(running: RunningTurn, callId: string, result: ExecutionResult): void {
    const budget = running.budget(callId);
    if (budget.exhausted) {
      budget.resultsSeen++;
      return;
    }
    this.target.emit({ type: 'result-ready', callId, result: this.target.links.present(result) });
  }

  /**
   * The agents speak the conversation's vocabulary; what differs is presented
   * here: results and files become links, and events only a process sees stay
   * in it (the conversation ends the turn with its own `answer-end`).
   */
  agentEvent(event: AgentEvent): void {
    switch (event.type) {
      case 'step-end': {
        // A model that does not stream gives its words only here.
        const turn = this.target.turn();
        const last = turn?.steps[turn.steps.length - 1];
        const streamed = last?.type === 'text';
        if (!streamed && event.response.text.trim() !== '' && event.response.toolCalls.length > 0) {
          this.target.emit({ type: 'answer-delta', agent: event.agent, text: event.response.text });
        }
        break;
      }
      case 'result-ready': {
        const running = this.target.running();
        if (running) this.result(running, event.callId, event.result);
        break;
      }
      case 'execution-end':
        this.executionEnd(
          event.callId,
          event.execution,
          event.files.map((file) => this.target.links.codeFile(file)),
        );
        break;
      case 'answer-end':
      case 'tool-call-start':
      case 'tool-call-end':
      case 'file-written':
      case 'file-loaded':
        break;
      default:
        this.target.emit(event);
    }
  }

  executionEnd(callId: string, execution: Execution, files: CodeFile[]): void {
    const running = this.target.running();
    if (!running) return;
    const summary: ExecutionSummary = {
      status: execution.status,
      ...(execution.error ? { error: errorWithin(execution.error, this.target.outputBytes) } : {}),
      executionCount: execution.executionCount,
      durationMs: execution.durationMs,
      ...(execution.stateLost ? { stateLost: true, stateLostReason: execution.stateLostReason } : {}),
      ...(execution.outputTruncated ? { outputTruncated: true } : {}),
    };
    // Results streamed during the run were kept (or left out) already; the rest are kept now, within the budget.
    const turn = this.target.turn();
    const step = turn?.steps.findLast((candidate) => candidate.type === 'code' && candidate.callId === callId);
    const results = step?.type === 'code' ? [...step.results] : [];
    const budget = running.budget(callId);
    for (const result of execution.results.slice(budget.resultsSeen)) {
      if (budget.exhausted) break;
      const kept = budget.result(this.target.links.present(result));
      if (kept) results.push(kept);
    }
    this.target.emit({ type: 'execution-end', callId, execution: summary, results, files });
    this.target.keepWithinLimits();
  }
}

/**
 * The one function that folds a conversation event into a turn. The server
 * folds the events it emits into the history it keeps; the web UI folds the
 * same events into what it shows, so a reopened conversation looks exactly
 * like the live one did.
 */
import type { ConversationEvent } from './events.js';
import type { CodeLanguage, CodeStatus, CodeStep, Turn } from './transcript.js';

function newCodeStep(
  event: { callId: string; code: string; language?: CodeLanguage },
  attempt: number,
  maxAttempts: number,
  status: CodeStatus,
): CodeStep {
  const { callId, code, language } = event;
  return {
    type: 'code',
    callId,
    code,
    ...(language && language !== 'python' ? { language } : {}),
    attempt,
    maxAttempts,
    status,
    stdout: '',
    stderr: '',
    results: [],
    files: [],
  };
}

function withCodeStep(turn: Turn, callId: string, change: (step: CodeStep) => CodeStep, create?: () => CodeStep): Turn {
  // A retried call id starts a new step; the latest step with the id is the one to change.
  for (let index = turn.steps.length - 1; index >= 0; index--) {
    const step = turn.steps[index];
    if (step?.type === 'code' && step.callId === callId) {
      const steps = turn.steps.slice();
      steps[index] = change(step);
      return { ...turn, steps };
    }
  }
  return create ? { ...turn, steps: [...turn.steps, change(create())] } : turn;
}

/** Folds one event into a turn, returning a new turn (the given one is not changed). */
export function applyConversationEvent(turn: Turn, event: ConversationEvent): Turn {
  switch (event.type) {
    case 'turn-start':
    case 'turn-end':
      return event.turn;
    case 'step-start':
      return turn;
    case 'answer-delta': {
      const last = turn.steps[turn.steps.length - 1];
      if (last?.type === 'text') {
        return { ...turn, steps: [...turn.steps.slice(0, -1), { type: 'text', text: last.text + event.text }] };
      }
      return { ...turn, steps: [...turn.steps, { type: 'text', text: event.text }] };
    }
    case 'code-ready':
      return {
        ...turn,
        steps: [...turn.steps, newCodeStep(event, event.attempt, event.maxAttempts, 'ready')],
      };
    case 'approval-request':
      return withCodeStep(
        turn,
        event.callId,
        (step) => ({ ...step, status: 'awaiting-approval', approvalId: event.approvalId }),
        () => newCodeStep(event, event.attempt, event.maxAttempts, 'awaiting-approval'),
      );
    case 'execution-start':
      return withCodeStep(
        turn,
        event.callId,
        (step) => {
          const { approvalId: _approvalId, ...rest } = step;
          return { ...rest, status: 'running', ...(event.edited ? { ranCode: event.code } : {}) };
        },
        () => newCodeStep(event, event.attempt, event.maxAttempts, 'running'),
      );
    case 'stdout-delta':
      return withCodeStep(turn, event.callId, (step) => ({ ...step, stdout: step.stdout + event.text }));
    case 'stderr-delta':
      return withCodeStep(turn, event.callId, (step) => ({ ...step, stderr: step.stderr + event.text }));
    case 'result-ready':
      return withCodeStep(turn, event.callId, (step) => ({ ...step, results: [...step.results, event.result] }));
    case 'execution-end':
      return withCodeStep(turn, event.callId, (step) => ({
        ...step,
        status: event.execution.status,
        execution: event.execution,
        results: event.results,
        files: event.files,
      }));
    case 'execution-skipped':
      return withCodeStep(
        turn,
        event.callId,
        (step) => {
          const { approvalId: _approvalId, ...rest } = step;
          return { ...rest, status: 'skipped', skipReason: event.reason };
        },
        () => newCodeStep(event, 1, 1, 'skipped'),
      );
    case 'answer-end': {
      const { type: _type, agent: _agent, ...answer } = event;
      return { ...turn, answer };
    }
    case 'error':
      return { ...turn, status: 'error', error: event.error };
    case 'session-resumed':
      return { ...turn, resumed: event.resumed };
  }
}

/**
 * What agents report while they work, for a UI to render: the shared event
 * vocabulary (src/protocol/events.ts) as it is in process, plus the events
 * only a process sees (the model's raw response, tool calls, files loaded).
 */
import type { Presentation, TurnAnswer, WorkEvent } from '../protocol/index.js';
import type { Execution, ExecutionResult } from '../session/execution.js';
import type { ChatResponse, ToolCall } from './model.js';
import type { ToolOutput } from './tool.js';

export type { StopReason } from '../protocol/index.js';

/** `stopReason`: `max-steps` is `maxSteps`, `gave-up` is `maxAttempts` failures in a row; `steps`: model calls made for this question. */
export interface AgentAnswer extends TurnAnswer {
  /** The model's answer in words. */
  text: string;
}

/** A file the code left in /mnt/data (new or changed), or a figure saved there from a result. */
export interface SessionFile {
  /** Relative to /mnt/data. */
  path: string;
  size: number;
  kind: 'file' | 'figure';
  /** Where it was saved on the host, when the front door saves files. */
  savedTo?: string;
}

/** In process: results with their image bytes, the execution as it ran, files with their host paths, the answer with its words. */
export interface InProcessPresentation extends Presentation {
  result: ExecutionResult;
  ended: {
    /** The code that ran (the edited code, when the user edited it). */
    code: string;
    attempt: number;
    maxAttempts: number;
    execution: Execution;
    files: SessionFile[];
  };
  answer: AgentAnswer;
}

export type AgentEvent =
  | WorkEvent<InProcessPresentation>
  | { type: 'step-end'; agent: string; step: number; response: ChatResponse }
  | { type: 'tool-call-start'; agent: string; toolCall: ToolCall }
  | { type: 'tool-call-end'; agent: string; toolCall: ToolCall; output: ToolOutput }
  /** A file is in the session (/mnt/data); its preview is being computed. */
  | { type: 'file-written'; sessionPath: string; size: number }
  | { type: 'file-loaded'; file: LoadedFileSummary };

export interface LoadedFileSummary {
  /** The host file it was read from; absent for bytes the user sent (an upload). */
  hostPath?: string;
  /** Where the code finds it: /mnt/data/<name>. */
  sessionPath: string;
  size: number;
  format: 'csv' | 'tsv' | 'json' | 'jsonl' | 'text' | 'binary';
  rows?: number;
  columns?: { name: string; dtype: string }[];
}

export type AgentEventListener = (event: AgentEvent) => void;

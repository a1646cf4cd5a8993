/** What agents report while they work, for a UI to render. Events are `<noun>-<action>`. */
import type { Execution } from '../session/execution.js';
import type { ChatResponse, ToolCall } from './model.js';
import type { ToolOutput } from './tool.js';

export type StopReason = 'answer' | 'max-steps' | 'gave-up';

export interface AgentAnswer {
  /** The model's answer in words. */
  text: string;
  /** `answer`: the model answered; `max-steps`: it was stopped at `maxSteps` and asked to wrap up; `gave-up`: code failed `maxAttempts` times in a row. */
  stopReason: StopReason;
  /** Model calls made for this question. */
  steps: number;
  usage: { inputTokens: number; outputTokens: number };
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

export type AgentEvent =
  | { type: 'step-start'; agent: string; step: number; maxSteps: number }
  | { type: 'answer-delta'; agent: string; text: string }
  | { type: 'step-end'; agent: string; step: number; response: ChatResponse }
  | { type: 'tool-call-start'; agent: string; toolCall: ToolCall }
  | { type: 'tool-call-end'; agent: string; toolCall: ToolCall; output: ToolOutput }
  | { type: 'answer-end'; agent: string; answer: AgentAnswer }
  | { type: 'code-ready'; toolCallId: string; code: string; attempt: number; maxAttempts: number }
  | { type: 'execution-start'; toolCallId: string; code: string; attempt: number; maxAttempts: number; edited: boolean }
  | { type: 'stdout-delta'; toolCallId: string; text: string }
  | { type: 'stderr-delta'; toolCallId: string; text: string }
  | {
      type: 'execution-end';
      toolCallId: string;
      code: string;
      attempt: number;
      maxAttempts: number;
      execution: Execution;
      files: SessionFile[];
    }
  | { type: 'execution-skipped'; toolCallId: string; code: string; reason: 'declined' | 'no-attempts-left' }
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

/** One turn of a conversation: a question and its answer, a notebook cell, or an upload. */

import { type FilePreview, formatBytes, type Turn } from '../../../src/protocol/index';
import { formatCount, formatTime } from '../format';
import type { CellLanguage } from '../languages';
import { CodeStepView, type Decision } from './CodeStep';
import { Markdown } from './Html';
import { PaperclipIcon } from './Icons';

export interface TurnViewProps {
  turn: Turn;
  onDecide?: (approvalId: string, decision: Decision, code?: string) => Promise<void>;
  onError?: (message: string) => void;
  onEditInCell?: (code: string, language?: CellLanguage) => void;
}

const STOP_NOTE: Record<string, string> = {
  'max-steps': 'The model used all the steps it may take for one question and stopped before a final answer.',
  'gave-up': 'The model gave up after its code kept failing.',
};

export function TurnView({ turn, onDecide, onError, onEditInCell }: TurnViewProps) {
  if (turn.kind === 'upload') return <UploadTurn turn={turn} />;
  if (turn.kind === 'cell') {
    const step = turn.steps.find((candidate) => candidate.type === 'code');
    return (
      <article class="turn turn-cell" aria-label="Notebook cell">
        <ResumedNote turn={turn} />
        {step && step.type === 'code' ? (
          <CodeStepView
            step={step}
            origin="cell"
            place={`cell ${step.execution?.executionCount ? `[${step.execution.executionCount}]` : formatTime(turn.createdAt)}`}
            onError={onError}
            onEditInCell={onEditInCell}
            turnStopped={turn.status === 'cancelled'}
          />
        ) : (
          <pre class="code-block">{turn.input}</pre>
        )}
        <TurnStatus turn={turn} />
      </article>
    );
  }
  let codeSteps = 0;
  const lastText = turn.steps.reduce((last, step, index) => (step.type === 'text' ? index : last), -1);
  return (
    <article class="turn turn-message" aria-label={`Question: ${turn.input.slice(0, 80)}`}>
      <ResumedNote turn={turn} />
      <div class="question">
        <div class="question-bubble">{turn.input}</div>
      </div>
      <div class="answer">
        {turn.steps.map((step, index) => {
          if (step.type === 'text') {
            const final = index === lastText && turn.status !== 'running' && turn.answer !== undefined;
            return (
              <div key={index} class={`answer-text${final ? ' final-answer' : ''}`}>
                <Markdown text={step.text} />
              </div>
            );
          }
          codeSteps++;
          return (
            <CodeStepView
              key={`${step.callId}-${index}`}
              step={step}
              origin="model"
              place={`step ${codeSteps}`}
              onDecide={onDecide}
              onError={onError}
              turnStopped={turn.status === 'cancelled'}
            />
          );
        })}
        {turn.status === 'running' &&
        !turn.steps.some(
          (step) => step.type === 'code' && (step.status === 'running' || step.status === 'awaiting-approval'),
        ) ? (
          <p class="thinking">
            <span class="spinner" aria-hidden="true" /> Working…
          </p>
        ) : null}
        <TurnStatus turn={turn} />
      </div>
    </article>
  );
}

/** The session resumed from a pause before this turn, and not everything came back: said before the turn. */
function ResumedNote({ turn }: { turn: Turn }) {
  if (!turn.resumed) return null;
  const names = turn.resumed.skipped.length;
  return (
    <p class="resumed-note" role="note">
      <strong>The session resumed from a pause.</strong> {turn.resumed.message}
      {names === 1 ? ' Run again the code that made it if you need it.' : ''}
      {names > 1 ? ' Run again the code that made them if you need them.' : ''}
    </p>
  );
}

function TurnStatus({ turn }: { turn: Turn }) {
  if (turn.status === 'error') {
    return (
      <p class="turn-error" role="alert">
        {turn.error?.message ?? 'This turn failed.'}
      </p>
    );
  }
  if (turn.status === 'cancelled') return <p class="turn-note">Stopped.</p>;
  const note = turn.answer ? STOP_NOTE[turn.answer.stopReason] : undefined;
  if (note) return <p class="turn-note">{note}</p>;
  return null;
}

function UploadTurn({ turn }: { turn: Turn }) {
  const files = turn.files ?? [];
  return (
    <article class="turn turn-upload" aria-label="Uploaded files">
      <ResumedNote turn={turn} />
      <p class="upload-title">
        <PaperclipIcon size={16} />
        {files.length === 1 ? 'Added 1 file' : `Added ${files.length} files`} to /mnt/data
      </p>
      {files.map((file) => (
        <FilePreviewCard key={file.path} file={file} />
      ))}
      <TurnStatus turn={turn} />
    </article>
  );
}

export function FilePreviewCard({ file }: { file: FilePreview }) {
  const facts = [file.format.toUpperCase(), formatBytes(file.size)];
  if (file.rows !== undefined && file.columns) {
    facts.push(`${formatCount(file.rows)} rows × ${formatCount(file.columns.length)} columns`);
  } else if (file.rows !== undefined) facts.push(`${formatCount(file.rows)} rows`);
  return (
    <section class="file-preview" aria-label={`Preview of ${file.path}`}>
      <header>
        <span class="file-name">{file.path}</span>
        <span class="file-facts">{facts.join(' · ')}</span>
      </header>
      {file.columns && file.columns.length > 0 ? (
        <ul class="column-list" aria-label="Columns">
          {file.columns.map((column) => (
            <li key={column.name}>
              <span class="column-name">{column.name}</span> <span class="column-dtype">{column.dtype}</span>
            </li>
          ))}
        </ul>
      ) : null}
      {file.head && file.head.rows.length > 0 ? (
        <div class="table-scroll">
          <table class="preview-table">
            <caption class="visually-hidden">First rows of {file.path}</caption>
            <thead>
              <tr>
                {file.head.columns.map((column) => (
                  <th key={column} scope="col">
                    {column}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {file.head.rows.map((row, rowIndex) => (
                <tr key={rowIndex}>
                  {row.map((cell, cellIndex) => (
                    <td key={cellIndex}>{cell}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : !file.columns ? (
        <pre class="preview-text">{file.text}</pre>
      ) : null}
    </section>
  );
}

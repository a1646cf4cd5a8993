/**
 * One piece of code and everything it produced: the code (highlighted,
 * collapsible), approval controls while it waits, stdout/stderr, results
 * (tables, charts, text), the error with its traceback, and the files it wrote.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { type CodeFile, type CodeStep, formatBytes, type PresentedResult } from '../../../src/protocol/index';
import { ApiError, download } from '../api';
import { useFollowOutput } from '../follow-output';
import { baseName, formatDuration } from '../format';
import { type CellLanguage, languageLabel } from '../languages';
import { stripAnsi } from '../render/ansi';
import { AnsiText } from './Ansi';
import { AuthImage } from './AuthImage';
import { CodeEditor } from './CodeEditor';
import { FoldableCode } from './FoldableCode';
import { HighlightedCode } from './HighlightedCode';
import { Markdown, SafeHtml } from './Html';
import { DownloadIcon } from './Icons';
import { SavedImages } from './SavedImages';

export type Decision = 'run' | 'skip' | 'edit';

export interface CodeStepViewProps {
  step: CodeStep;
  /** How images are named: "step 2", "cell [3]". */
  place: string;
  /** 'model': code the model wrote; 'cell': a notebook cell. */
  origin: 'model' | 'cell';
  onDecide?: (approvalId: string, decision: Decision, code?: string) => Promise<void>;
  onError?: (message: string) => void;
  /** Puts the code into the notebook's cell editor. */
  onEditInCell?: (code: string, language?: CellLanguage) => void;
  /** The user stopped the turn this step belongs to. */
  turnStopped?: boolean;
}

/** A step's status as shown: `stopped` is code the user interrupted, not code that failed. */
type ShownStatus = CodeStep['status'] | 'stopped';

const STATUS_LABEL: Record<ShownStatus, string> = {
  'awaiting-approval': 'Waiting for your approval',
  ready: 'Ready',
  running: 'Running…',
  ok: 'Done',
  error: 'Error',
  timeout: 'Timed out',
  skipped: 'Skipped',
  stopped: 'Stopped',
};

/** Code the user stopped ends in a KeyboardInterrupt (or never reported its end): that is no error of the code. */
function shownStatus(step: CodeStep, turnStopped: boolean): ShownStatus {
  if (!turnStopped) return step.status;
  const interrupted = step.status === 'error' && step.execution?.error?.name === 'KeyboardInterrupt';
  return interrupted || step.status === 'running' ? 'stopped' : step.status;
}

const SKIP_REASON: Record<NonNullable<CodeStep['skipReason']>, string> = {
  declined: 'you chose not to run it',
  'no-attempts-left': 'no attempts were left',
  cancelled: 'the turn was stopped',
};

export function CodeStepView(props: CodeStepViewProps) {
  const { step, place, origin, onDecide, onError, onEditInCell } = props;
  const shownCode = step.ranCode ?? step.code;
  const awaiting = step.status === 'awaiting-approval' && step.approvalId !== undefined;
  const [open, setOpen] = useState(true);
  const status = shownStatus(step, props.turnStopped === true);
  const summaryBits = [STATUS_LABEL[status]];
  if (step.attempt > 1 || (step.maxAttempts > 1 && step.status === 'error')) {
    summaryBits.push(`attempt ${step.attempt} of ${step.maxAttempts}`);
  }
  if (step.execution) summaryBits.push(formatDuration(step.execution.durationMs));
  const language = languageLabel(step.language);
  const label = origin === 'cell' ? `Cell · ${language}` : language;
  const count = step.execution?.executionCount;

  return (
    <section
      class={`code-step status-${status}`}
      aria-label={`${origin === 'cell' ? 'Notebook' : 'Code,'} ${place}: ${STATUS_LABEL[status]}`}
      aria-busy={status === 'running'}
    >
      <details
        open={open}
        onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}
        class="code-details"
      >
        <summary>
          <span class="code-label">
            {label}
            {count !== undefined && count > 0 ? <span class="exec-count"> [{count}]</span> : null}
          </span>
          <span class={`status-badge badge-${status}`}>
            {status === 'running' ? <span class="spinner" aria-hidden="true" /> : null}
            {summaryBits.join(' · ')}
          </span>
          {step.ranCode !== undefined ? <span class="edited-badge">edited before running</span> : null}
        </summary>
        <FoldableCode code={shownCode} language={step.language} />
        {step.ranCode !== undefined && step.ranCode !== step.code ? (
          <details class="original-code">
            <summary>Code as first written</summary>
            <HighlightedCode code={step.code} language={step.language} />
          </details>
        ) : null}
      </details>
      {awaiting && onDecide ? <ApprovalControls step={step} onDecide={onDecide} onError={onError} /> : null}
      {step.status === 'skipped' ? (
        <p class="skipped-note">Not run{step.skipReason ? `: ${SKIP_REASON[step.skipReason]}` : ''}.</p>
      ) : null}
      <StepOutputs step={step} place={place} onError={onError} stopped={status === 'stopped'} />
      {origin === 'cell' && onEditInCell && status !== 'running' ? (
        <div class="step-actions">
          <button
            type="button"
            class="button-quiet small"
            onClick={() => onEditInCell(shownCode, step.language === 'shell' ? undefined : step.language)}
          >
            Edit in a new cell
          </button>
        </div>
      ) : null}
    </section>
  );
}

function ApprovalControls({
  step,
  onDecide,
  onError,
}: {
  step: CodeStep;
  onDecide: NonNullable<CodeStepViewProps['onDecide']>;
  onError?: (message: string) => void;
}) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(step.code);
  const [pending, setPending] = useState(false);
  const runButton = useRef<HTMLButtonElement>(null);
  const approvalId = step.approvalId!;

  useEffect(() => {
    // Keyboard users land on the decision as soon as it is asked for.
    runButton.current?.focus({ preventScroll: false });
  }, [approvalId]);

  const decide = async (decision: Decision, code?: string) => {
    setPending(true);
    try {
      await onDecide(approvalId, decision, code);
    } catch (error) {
      setPending(false);
      const message =
        error instanceof ApiError && error.status === 409
          ? 'This code was already decided on.'
          : error instanceof ApiError && error.status === 404
            ? 'This approval is no longer pending.'
            : (error as Error).message;
      onError?.(message);
    }
  };

  if (editing) {
    return (
      <div class="approval approval-editing">
        <CodeEditor
          value={draft}
          onInput={setDraft}
          onRun={() => void decide('edit', draft)}
          label={step.language === 'shell' ? 'Edit the command before it runs' : 'Edit the code before it runs'}
          language={step.language === 'shell' ? 'bash' : step.language}
          autoFocus
        />
        <div class="approval-buttons">
          <button type="button" class="button-primary" disabled={pending} onClick={() => void decide('edit', draft)}>
            Run edited
          </button>
          <button type="button" class="button-quiet" disabled={pending} onClick={() => setEditing(false)}>
            Cancel edit
          </button>
        </div>
      </div>
    );
  }
  return (
    <fieldset class="approval">
      <legend class="approval-question">{step.language === 'shell' ? 'Run this command?' : 'Run this code?'}</legend>
      <div class="approval-buttons">
        <button
          ref={runButton}
          type="button"
          class="button-primary"
          disabled={pending}
          onClick={() => void decide('run')}
        >
          Run
        </button>
        <button type="button" class="button-secondary" disabled={pending} onClick={() => void decide('skip')}>
          Skip
        </button>
        <button
          type="button"
          class="button-secondary"
          disabled={pending}
          onClick={() => {
            setDraft(step.code);
            setEditing(true);
          }}
        >
          Edit
        </button>
      </div>
    </fieldset>
  );
}

export function StepOutputs({
  step,
  place,
  onError,
  stopped = false,
}: {
  step: CodeStep;
  place: string;
  onError?: (message: string) => void;
  /** The user stopped it: what it printed stays, the KeyboardInterrupt is no error to show. */
  stopped?: boolean;
}) {
  const execution = step.execution;
  let imageCount = 0;
  const hasOutput = step.stdout || step.stderr || step.results.length > 0 || execution?.error || step.files.length > 0;
  if (!hasOutput && !execution?.stateLost && !execution?.outputTruncated && step.status !== 'timeout') return null;
  const running = step.status === 'running';
  return (
    <div class="outputs">
      {step.stdout ? <PrintedOutput name="stdout" text={step.stdout} running={running} /> : null}
      {step.stderr ? <PrintedOutput name="stderr" text={step.stderr} running={running} /> : null}
      {step.results.map((result, index) => {
        const first = imageCount;
        imageCount += result.images?.length ?? 0;
        return <ResultView key={index} result={result} place={place} firstImage={first} />;
      })}
      {execution?.error && !stopped ? (
        <div class="error-output" role="alert">
          <p class="error-title">
            {execution.error.name}: {stripAnsi(execution.error.value)}
          </p>
          {execution.error.traceback.length > 0 ? (
            <pre class="traceback">
              <AnsiText text={execution.error.traceback.join('\n')} />
            </pre>
          ) : null}
        </div>
      ) : null}
      {step.status === 'timeout' && !execution?.error ? (
        <p class="error-output" role="alert">
          The code ran out of time and was stopped.
        </p>
      ) : null}
      {execution?.stateLost ? (
        <p class="warning-note">
          The Python process restarted: variables from earlier code are gone
          {execution.stateLostReason ? ` (${execution.stateLostReason})` : ''}.
        </p>
      ) : null}
      {execution?.outputTruncated ? <p class="warning-note">The output was too long and was cut.</p> : null}
      <SavedImages files={step.files} onError={onError} />
      {step.files.length > 0 ? <FileLinks files={step.files} onError={onError} /> : null}
    </div>
  );
}

/** What the code printed; its box is bounded in height, and shows the newest lines while the code runs. */
function PrintedOutput({ name, text, running }: { name: 'stdout' | 'stderr'; text: string; running: boolean }) {
  const box = useRef<HTMLPreElement>(null);
  useFollowOutput(box, { active: running });
  return (
    <pre ref={box} class={`stream ${name}`}>
      <AnsiText text={text} />
    </pre>
  );
}

function ResultView({ result, place, firstImage }: { result: PresentedResult; place: string; firstImage: number }) {
  const data = result.data;
  const images = result.images ?? [];
  const html = typeof data['text/html'] === 'string' ? (data['text/html'] as string) : undefined;
  const markdown = typeof data['text/markdown'] === 'string' ? (data['text/markdown'] as string) : undefined;
  const plain = typeof data['text/plain'] === 'string' ? (data['text/plain'] as string) : undefined;
  const json = data['application/json'];
  let body = null;
  if (html !== undefined) body = <SafeHtml html={html} />;
  else if (markdown !== undefined) body = <Markdown text={markdown} />;
  else if (json !== undefined && images.length === 0)
    body = <pre class="result-text">{JSON.stringify(json, null, 2)}</pre>;
  // A figure's text/plain is only "<Figure size …>": the image says it better.
  else if (plain !== undefined && images.length === 0) {
    body = (
      <pre class="result-text">
        <AnsiText text={plain} />
      </pre>
    );
  }
  return (
    <div class={`result result-${result.type}`}>
      {images.map((image, index) => (
        <figure class="figure" key={image.url}>
          <AuthImage url={image.url} alt={`Chart ${firstImage + index + 1} from ${place}`} zoomable />
        </figure>
      ))}
      {body}
    </div>
  );
}

function FileLinks({ files, onError }: { files: CodeFile[]; onError?: (message: string) => void }) {
  return (
    <div class="file-links">
      <span class="file-links-title">Files written</span>
      <ul>
        {files.map((file) => (
          <li key={file.path}>
            <button
              type="button"
              class="link-button"
              aria-label={`Download ${file.path}`}
              onClick={() =>
                download(file.url, baseName(file.path)).catch((error: Error) =>
                  onError?.(`Download of ${file.path} failed: ${error.message}`),
                )
              }
            >
              <DownloadIcon size={15} />
              {file.path}
            </button>
            <span class="muted"> {formatBytes(file.size)}</span>
            {file.kind === 'figure' ? <span class="muted"> · figure</span> : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * PythonExecAgent: answers questions by writing Python that runs in a sandboxed
 * session, through the generated tool `execute_python_code`. It never touches
 * host files: code, figures and files stay in the session (/mnt/data). Failed
 * code goes back to the model with its traceback, bounded by `maxAttempts`
 * consecutive failures, after which the model is asked to explain instead.
 */
import { z } from 'zod';
import { bufferEncoding, findImage } from '../protocol/images.js';
import type { CommandOptions, CommandResult } from '../session/command.js';
import type { Execution, RunOptions } from '../session/execution.js';
import { FileChanges } from '../session/file-changes.js';
import type { Session } from '../session/session.js';
import { Agent, type AgentOptions } from './agent.js';
import { ModelConfigurationError } from './errors.js';
import type { SessionFile, StopReason } from './events.js';
import { formatExecutionReport, pngSize } from './execution-report.js';
import { commandExecution, RUN_SHELL_COMMAND, SHELL_COMMAND_DESCRIPTION } from './shell-command-tool.js';
import { defineTool, type ToolOutput } from './tool.js';

export const DEFAULT_MAX_ATTEMPTS = 3;
export const EXECUTE_PYTHON_CODE = 'execute_python_code';

export const DEFAULT_PYTHON_INSTRUCTIONS = `You are an expert data analyst working in a Python sandbox.
Answer the user's questions by writing Python and running it with the ${EXECUTE_PYTHON_CODE} tool.
- The sandbox is an IPython session: variables and imports persist between calls. It has no network access.
- Data files are in /mnt/data (also the working directory). Save charts and files there; they are shown to the user.
- pandas, numpy, matplotlib, seaborn, scipy, statsmodels and scikit-learn are installed; nothing else can be installed.
- Use print() for the figures you need; the value of the last expression is shown too. Keep output short.
- Call plt.show() to display a chart (you will get its file name, not the image).
- For file work (listing, unpacking, counting lines) you may use the ${RUN_SHELL_COMMAND} tool: bash in the same sandbox, /mnt/data shared with Python.
- If the code fails, read the traceback and fix the code.
- When you have the answer, explain it in plain words with the key numbers; do not paste code into the answer.`;

/** A command the agent waits for (never a background one). */
type ForegroundCommandOptions = CommandOptions & { background?: false };

export type ApprovalDecision =
  | { action: 'run' }
  | { action: 'skip'; reason?: string }
  | { action: 'edit'; code: string };

/** Which tool wrote a piece of code: Python for the kernel, shell for a command. */
export type CodeTool = 'python' | 'shell';

export interface ApprovalRequest {
  callId: string;
  /** The Python code, or the shell command. */
  code: string;
  /** `shell` for run_shell_command, so an approver can show it as `$ command`. */
  language: CodeTool;
  attempt: number;
  maxAttempts: number;
}

/** What one call of the tool did: what ran, or why not. */
export interface ExecutionRecord {
  callId: string;
  /** The code the model wrote. */
  code: string;
  /** The code that ran, if the user edited it. */
  editedCode?: string;
  language: CodeTool;
  attempt: number;
  status: 'ok' | 'error' | 'timeout' | 'declined' | 'no-attempts-left';
  execution?: Execution;
  files: SessionFile[];
}

export interface PythonExecAgentOptions extends Omit<AgentOptions, 'instructions' | 'tools'> {
  session: Session;
  /** @default DEFAULT_PYTHON_INSTRUCTIONS */
  instructions?: string;
  /** Appended to the instructions: the data files and what they hold. */
  context?: string;
  /** Failed executions in a row before the model is told to stop and explain. @default 3 */
  maxAttempts?: number;
  /** Asked before each execution: run it, skip it (reported to the model as declined), or run an edited version. */
  approve?: (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;
  /** Characters of one execution's report to the model. @default 8_000 */
  maxToolOutputChars?: number;
  /** Wall-clock limit of one execution. @default the session's */
  executionTimeoutMs?: number;
  /** Called after each execution, before `execution-end`: e.g. to copy the files out (setting `savedTo`). */
  afterExecution?: (record: ExecutionRecord) => Promise<void>;
  /** How code runs. @default `session.run`; a server passes its own to apply its limits and count the work. */
  run?: (code: string, options: RunOptions) => Promise<Execution>;
  /** Offer the model run_shell_command beside execute_python_code. @default true */
  shellCommands?: boolean;
  /** How a shell command runs. @default `session.commands.run` */
  runCommand?: (command: string, options: ForegroundCommandOptions) => Promise<CommandResult>;
}

export class PythonExecAgent extends Agent {
  readonly session: Session;
  readonly maxAttempts: number;
  /** Every tool call of the current (or last) question. */
  records: ExecutionRecord[] = [];
  private failures = 0;
  /** What /mnt/data held after the last execution, to tell new and changed files apart. */
  private readonly fileChanges: FileChanges;
  private readonly options: PythonExecAgentOptions;

  constructor(options: PythonExecAgentOptions) {
    super({
      ...options,
      name: options.name ?? 'python',
      instructions: joinContext(options.instructions ?? DEFAULT_PYTHON_INSTRUCTIONS, options.context),
    });
    this.options = options;
    this.session = options.session;
    this.fileChanges = new FileChanges(options.session.files);
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new ModelConfigurationError(
        `\`maxAttempts\` must be a positive integer; got ${String(options.maxAttempts)}.`,
      );
    }
    this.tools.add(
      defineTool({
        name: EXECUTE_PYTHON_CODE,
        description:
          'Runs Python code in a stateful, sandboxed IPython session (working directory /mnt/data, no network) and returns its stdout, stderr, results, errors with traceback, and the names and sizes of charts and files it wrote.',
        parameters: z.object({ code: z.string().min(1).describe('The Python code to run.') }),
        run: ({ code }, context) => this.execute(code, 'python', context.toolCallId, context.signal),
      }),
    );
    if (options.shellCommands !== false) {
      this.tools.add(
        defineTool({
          name: RUN_SHELL_COMMAND,
          description: SHELL_COMMAND_DESCRIPTION,
          parameters: z.object({ command: z.string().min(1).describe('The command line, run with bash -c.') }),
          run: ({ command }, context) => this.execute(command, 'shell', context.toolCallId, context.signal),
        }),
      );
    }
  }

  /** Adds context (e.g. a data preview) to the developer prompt. */
  addContext(text: string): void {
    this.instructions = joinContext(this.instructions, text);
  }

  protected override beginQuestion(): void {
    this.failures = 0;
    this.records = [];
  }

  protected override stopReason(): StopReason | undefined {
    return this.failures >= this.maxAttempts ? 'gave-up' : undefined;
  }

  /** One tool call: approval, the run (code in the python context, or a shell command), its report to the model. */
  private async execute(code: string, language: CodeTool, callId: string, signal?: AbortSignal): Promise<ToolOutput> {
    const attempt = this.failures + 1;
    const maxAttempts = this.maxAttempts;
    if (this.failures >= maxAttempts) {
      this.records.push({ callId, code, language, attempt: this.failures, status: 'no-attempts-left', files: [] });
      this.emit({ type: 'execution-skipped', callId, code, language, reason: 'no-attempts-left' });
      return {
        content: `Not run: the code already failed ${maxAttempts} times in a row. Do not run more code; explain to the user what went wrong.`,
        isError: true,
      };
    }
    this.emit({ type: 'code-ready', callId, code, language, attempt, maxAttempts });
    let editedCode: string | undefined;
    if (this.options.approve) {
      const decision = await this.options.approve({ callId, code, language, attempt, maxAttempts });
      if (decision.action === 'skip') {
        this.records.push({ callId, code, language, attempt, status: 'declined', files: [] });
        this.emit({ type: 'execution-skipped', callId, code, language, reason: 'declined' });
        const why = decision.reason ? ` Their reason: ${decision.reason}` : '';
        return {
          content: `The user declined to run this ${language === 'shell' ? 'command' : 'code'}, so it was not executed.${why} Do not run it again unchanged; ask the user or answer without it.`,
        };
      }
      if (decision.action === 'edit' && decision.code !== code) editedCode = decision.code;
    }
    const ran = editedCode ?? code;
    await this.fileChanges.snapshot();
    this.emit({
      type: 'execution-start',
      callId,
      code: ran,
      language,
      attempt,
      maxAttempts,
      edited: editedCode !== undefined,
    });
    const streams = {
      signal,
      timeoutMs: this.options.executionTimeoutMs,
      onStdout: (text: string) => this.emit({ type: 'stdout-delta', callId, text }),
      onStderr: (text: string) => this.emit({ type: 'stderr-delta', callId, text }),
    };
    let execution: Execution;
    let exitCode: number | undefined;
    if (language === 'shell') {
      const runCommand =
        this.options.runCommand ??
        ((command: string, options: ForegroundCommandOptions) => this.session.commands.run(command, options));
      const result = await runCommand(ran, streams);
      exitCode = result.exitCode;
      execution = commandExecution(result);
    } else {
      const run = this.options.run ?? ((source: string, options: RunOptions) => this.session.run(source, options));
      execution = await run(ran, streams);
    }
    const files = await this.changedFiles();
    const figureNotes = new Map<string, string>();
    files.push(...(await this.saveFigures(execution, figureNotes)));
    this.failures = execution.status === 'ok' ? 0 : this.failures + 1;
    const record: ExecutionRecord = {
      callId,
      code,
      editedCode,
      language,
      attempt,
      status: execution.status,
      execution,
      files,
    };
    this.records.push(record);
    await this.options.afterExecution?.(record);
    this.emit({ type: 'execution-end', callId, code: ran, attempt, maxAttempts, execution, files });
    const content = formatExecutionReport({
      execution,
      attempt,
      maxAttempts,
      files,
      figureNotes,
      editedCode,
      exitCode,
      maxChars: this.options.maxToolOutputChars,
    });
    return { content, isError: execution.status !== 'ok' };
  }

  private async changedFiles(): Promise<SessionFile[]> {
    return (await this.fileChanges.changed()).map((entry) => ({ path: entry.path, size: entry.size, kind: 'file' }));
  }

  /** Images in the results become figure-N files in /mnt/data: the model gets their names, the user the files. */
  private async saveFigures(execution: Execution, notes: Map<string, string>): Promise<SessionFile[]> {
    const figures: SessionFile[] = [];
    let index = 0;
    for (const result of execution.results) {
      const image = findImage(result.data);
      if (!image) continue;
      const { extension, label } = image.type;
      const bytes = Buffer.from(image.content, bufferEncoding(image.type));
      let name: string;
      do {
        index += 1;
        name = `figure-${index}.${extension}`;
      } while (this.fileChanges.has(name));
      const written = await this.session.files.write(name, bytes);
      await this.fileChanges.remember(name);
      const dimensions = label === 'PNG' ? pngSize(bytes) : undefined;
      notes.set(name, dimensions ? `${label}, ${dimensions.width}×${dimensions.height} px` : label);
      figures.push({ path: name, size: written.size, kind: 'figure' });
    }
    return figures;
  }
}

function joinContext(instructions: string, context: string | undefined): string {
  return context?.trim() ? `${instructions}\n\n${context.trim()}` : instructions;
}

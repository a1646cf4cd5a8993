/**
 * DataChat: the reference scenario as a library. One session; the
 * FileAccessAgent copies the user's data files into it and hands their
 * previews to the PythonExecAgent as context; questions go to the
 * PythonExecAgent; files the code writes can be saved on the host.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { SessionOptions } from '../session/options.js';
import { createSession, type Session } from '../session/session.js';
import type { AskOptions } from './agent.js';
import { resolveDataRoots } from './data-roots.js';
import type { AgentAnswer, AgentEventListener, SessionFile } from './events.js';
import { FileAccessAgent, type LoadedFile } from './file-access-agent.js';
import type { ChatModel } from './model.js';
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type ExecutionRecord,
  PythonExecAgent,
  type PythonExecAgentOptions,
} from './python-exec-agent.js';

/** Files taken from a data directory at most. */
export const MAX_FILES_PER_DIRECTORY = 20;

export interface DataChatOptions {
  model: ChatModel;
  /** Host files or directories to analyse (the data roots); a directory's top-level files are loaded. @default [] */
  data?: readonly string[];
  /** Extra context for the model, e.g. descriptions of the columns. */
  context?: string;
  /** An existing session to use (closed by `close()` only with `ownSession`); else one is created from `sessionOptions`. */
  session?: Session;
  /** Whether `close()` (and a failed `create()`) closes the given `session`. @default false */
  ownSession?: boolean;
  sessionOptions?: SessionOptions;
  /** Host directory where files the code writes (and figures) are saved; not saved when unset. */
  outputDir?: string;
  /** Instructions of the PythonExecAgent (the data previews are appended). */
  instructions?: string;
  maxSteps?: number;
  maxAttempts?: number;
  maxFileBytes?: number;
  maxToolOutputChars?: number;
  executionTimeoutMs?: number;
  approve?: (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;
  /** How code runs. @default `session.run` */
  run?: PythonExecAgentOptions['run'];
  /** How a shell command (run_shell_command) runs. @default `session.commands.run` */
  runCommand?: PythonExecAgentOptions['runCommand'];
  onEvent?: AgentEventListener;
}

export interface DataAnswer extends AgentAnswer {
  /** Each execute_python_code call of this question, what ran and what came of it. */
  executions: ExecutionRecord[];
  /** Files written by the code in this question (with `savedTo` when saved on the host). */
  files: SessionFile[];
}

export class DataChat {
  readonly fileAgent: FileAccessAgent;
  readonly pythonAgent: PythonExecAgent;

  private constructor(
    readonly session: Session,
    private readonly ownsSession: boolean,
    private readonly options: DataChatOptions,
  ) {
    this.fileAgent = new FileAccessAgent({
      model: options.model,
      dataRoots: options.data ?? [],
      files: session.files,
      maxFileBytes: options.maxFileBytes,
      onEvent: options.onEvent,
    });
    this.pythonAgent = new PythonExecAgent({
      model: options.model,
      session,
      instructions: options.instructions,
      context: options.context ? `Context from the user about the data:\n${options.context}` : undefined,
      maxSteps: options.maxSteps,
      maxAttempts: options.maxAttempts,
      maxToolOutputChars: options.maxToolOutputChars,
      executionTimeoutMs: options.executionTimeoutMs,
      approve: options.approve,
      run: options.run,
      runCommand: options.runCommand,
      onEvent: options.onEvent,
      afterExecution: options.outputDir ? (record) => this.saveFiles(record.files) : undefined,
    });
  }

  /** Creates the session (unless given), checks the data roots and loads the data. */
  static async create(options: DataChatOptions): Promise<DataChat> {
    await resolveDataRoots(options.data ?? []); // fail on a bad path before starting a sandbox
    const session = options.session ?? (await createSession(options.sessionOptions));
    const owns = options.session === undefined || options.ownSession === true;
    try {
      const chat = new DataChat(session, owns, options);
      await chat.loadData();
      return chat;
    } catch (error) {
      if (owns) await session.close();
      throw error;
    }
  }

  get loaded(): readonly LoadedFile[] {
    return this.fileAgent.loaded;
  }

  private async loadData(): Promise<void> {
    const previews: string[] = [];
    for (const root of await this.fileAgent.dataRoots()) {
      const files =
        root.kind === 'file'
          ? [root.given]
          : (await readdir(root.given, { withFileTypes: true }))
              .filter((entry) => entry.isFile() && !entry.name.startsWith('.'))
              .map((entry) => path.join(root.given, entry.name))
              .sort()
              .slice(0, MAX_FILES_PER_DIRECTORY);
      for (const file of files) previews.push((await this.fileAgent.load(file)).preview);
    }
    if (previews.length > 0) this.pythonAgent.addContext(`The data files:\n\n${previews.join('\n\n')}`);
  }

  /**
   * Adds a file the user sent (e.g. an upload to a server) to the session's
   * /mnt/data and its preview to the model's context.
   */
  async addFile(name: string, bytes: Buffer): Promise<LoadedFile> {
    const loaded = await this.fileAgent.share(name, bytes);
    this.pythonAgent.addContext(`A data file the user added:\n\n${loaded.preview}`);
    return loaded;
  }

  /** Asks a question about the data; the model writes and runs code until it can answer. */
  async ask(question: string, options: AskOptions = {}): Promise<DataAnswer> {
    const answer = await this.pythonAgent.ask(question, options);
    const executions = [...this.pythonAgent.records];
    const latest = new Map<string, SessionFile>();
    for (const record of executions) for (const file of record.files) latest.set(file.path, file);
    return { ...answer, executions, files: [...latest.values()] };
  }

  /** Closes the session, if this chat created it. */
  async close(): Promise<void> {
    if (this.ownsSession) await this.session.close();
  }

  private async saveFiles(files: SessionFile[]): Promise<void> {
    for (const file of files) {
      const target = await this.session.files.saveTo(file.path, this.options.outputDir!);
      if (target) file.savedTo = target;
    }
  }
}

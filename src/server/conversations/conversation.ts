/**
 * One conversation of the server: a session (from the registry), the data
 * chat that asks the server's model about it, and the transcript of every
 * turn (questions, notebook cells, uploads). One turn runs at a time; its
 * events are folded into the transcript and handed to whoever listens (an SSE
 * response). A client that goes away does not stop the turn; `cancel()` does.
 *
 * The agent's code and shell commands go through the registry (`execute`,
 * `commands.run`), so rate limits, timeouts, metrics and graceful shutdown
 * apply as to any execution. In `ask` mode an approval is an
 * `approval-request` event answered by `POST …/approvals/{id}`. Uploads take a
 * token from the key's rate before their body is read, and are written into
 * /mnt/data by the FileAccessAgent (bytes from the user, no host path).
 *
 * Its session may be paused (idle, or by a server that stops) and resumed
 * under the same id: the next turn resumes it (`ensureSession`) and binds the
 * chat, the file agent and the cell's file watcher to the new session; what
 * did not come back is said to the user (`session-resumed`) and to the model.
 * Only a session that is gone (deleted, closed, its state not kept) expires
 * the conversation, which can then be continued in a new one.
 *
 * The running turn (its approvals, listeners and output budgets) is
 * running-turn.ts; what is bound to a session, and which failures mean it is
 * gone, session-binding.ts; what the history keeps within its bounds is
 * conversation-history.ts. Over 500 lines still, because what is left is one
 * state machine: every kind of turn (a question, a cell, an upload) folds its
 * events through the one `emit` into the one transcript, and the agents'
 * events are presented with the conversation's session and images. Cut
 * further, each piece would need the conversation's private state passed in.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DataChat } from '../../agents/data-chat.js';
import type { FileAccessAgent } from '../../agents/file-access-agent.js';
import type { ChatModel } from '../../agents/model.js';
import type { ApprovalDecision, ApprovalRequest } from '../../agents/python-exec-agent.js';
import {
  type ApprovalMode,
  applyConversationEvent,
  type ConversationEvent,
  type ConversationMode,
  type ConversationSummary,
  type Conversation as ConversationView,
  type FilePreview,
  type SessionResumed,
  type Turn,
} from '../../protocol/index.js';
import type { FileChanges } from '../../session/file-changes.js';
import type { Language } from '../../session/languages.js';
import type { Session } from '../../session/session.js';
import type { Owner } from '../core/auth.js';
import {
  ApprovalNotFoundError,
  ConversationBusyError,
  ConversationExpiredError,
  ConversationPausedError,
  ModelNotConfiguredError,
} from '../core/errors.js';
import { ImageStore } from '../core/image-store.js';
import type { ManagedSession, PausedRecord } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { continuationContext } from './continuation.js';
import { ConversationHistory, imageName } from './conversation-history.js';
import type { ConversationJournal } from './conversation-journal.js';
import { ConversationLinks } from './conversation-links.js';
import { DEFAULT_HISTORY_LIMITS, type HistoryLimits, turnImageUrls } from './history-limits.js';
import { type HeaderRecord, HISTORY_FORMAT_VERSION } from './history-records.js';
import { resumeNoteForModel, resumeNotice } from './resume-notice.js';
import { type ApprovalAnswer, RunningTurn, type TurnListener } from './running-turn.js';
import { bindSession, describeExpiry, type Expiry, goneBecause, resumable } from './session-binding.js';
import type { StoredHistory } from './state-directory.js';
import { titleFrom, titleFromCell, titleFromFiles, UNTITLED } from './title.js';
import { describeTurnError } from './turn-errors.js';
import { TurnEvents } from './turn-events.js';

/** Images kept per conversation (for its history and its notebook export); the oldest go first. */
const MAX_CONVERSATION_IMAGES = 256;

export interface ConversationSettings {
  registry: SessionRegistry;
  logger: Logger;
  /** The server's model; without one only cells and uploads work. */
  model?: ChatModel;
  approvalDefault: ApprovalMode;
  /** What conversations keep. @default DEFAULT_HISTORY_LIMITS */
  limits?: HistoryLimits;
  /** Called when a conversation's history grew (the store keeps the key's conversations within bounds). */
  onHistoryGrew?: (conversation: ServerConversation) => void;
}

export type { ApprovalAnswer, TurnListener } from './running-turn.js';

/** The conversation a new one continues (its session gone), shown to the user and told to the model. */
export interface ContinuedFrom {
  id: string;
  title: string;
}

export type { Expiry } from './session-binding.js';

export class ServerConversation {
  readonly id: string;
  readonly createdAt: number;
  readonly owner: Owner;
  updatedAt: number;
  title: string;
  titled: boolean;
  private chosenMode: ConversationMode | undefined;
  readonly continuedFrom?: ContinuedFrom;
  readonly images: ImageStore;
  /** Writes the history to disk as it changes, when the server keeps a state directory. */
  journal?: ConversationJournal;
  private readonly limits: HistoryLimits;
  private readonly history: ConversationHistory;
  private running?: RunningTurn;
  private expiry?: Expiry;
  /**
   * The session it runs on, and what is bound to it: the chat (with a model), the file agent, the cell's
   * file watcher. A conversation read back from disk has none until its next turn resumes its session.
   */
  private current?: ManagedSession;
  private chat?: DataChat;
  private fileAgent?: FileAccessAgent;
  private cellFiles?: FileChanges;
  /** How its outputs are linked: images, files, and the newest published link of each file. */
  private readonly links: ConversationLinks;
  /** What its turns' agents and executions become in its history. */
  private readonly events: TurnEvents;
  /** The resume under way: two requests at once share it. */
  private resuming?: Promise<void>;
  /** What the last resume did not bring back, said at the start of the next turn. */
  private pendingNotice?: SessionResumed;
  /** The id of its session: the same across pauses and resumes (and restarts, from the journal). */
  private readonly sessionId: string;

  private constructor(
    private readonly settings: ConversationSettings,
    title: string | undefined,
    identity: { id: string; createdAt: number; owner: Owner; sessionId: string; continuedFrom?: ContinuedFrom },
  ) {
    this.id = identity.id;
    this.createdAt = identity.createdAt;
    this.updatedAt = identity.createdAt;
    this.owner = identity.owner;
    this.sessionId = identity.sessionId;
    if (identity.continuedFrom) this.continuedFrom = identity.continuedFrom;
    this.limits = settings.limits ?? DEFAULT_HISTORY_LIMITS;
    this.images = new ImageStore({ maxImages: MAX_CONVERSATION_IMAGES, maxBytes: this.limits.historyBytes });
    this.history = new ConversationHistory(this.images, this.limits.historyBytes, () => this.journal?.rewrite());
    this.links = new ConversationLinks(this.id, this.images, () => this.urlEntry());
    this.events = new TurnEvents({
      running: () => this.running,
      turn: () => (this.running ? this.turns[this.running.index] : undefined),
      emit: (event) => this.emit(event),
      links: this.links,
      outputBytes: this.limits.outputBytes,
      keepWithinLimits: () => this.keepWithinLimits(),
    });
    this.titled = Boolean(title?.trim());
    this.title = this.titled ? titleFrom(title!) : UNTITLED;
  }

  static async create(
    entry: ManagedSession,
    settings: ConversationSettings,
    title?: string,
    continues?: ServerConversation,
  ): Promise<ServerConversation> {
    const continuedFrom = continues ? { id: continues.id, title: continues.title } : undefined;
    const conversation = new ServerConversation(settings, title, {
      // Tagged as its session's id is: in a cluster, a request for it reaches the node that keeps it.
      id: entry.id.slice(0, 8) + randomUUID().slice(8),
      createdAt: Date.now(),
      owner: entry.owner,
      sessionId: entry.id,
      ...(continuedFrom ? { continuedFrom } : {}),
    });
    await conversation.bind(entry);
    // The model reads the earlier history; nothing of it runs again unless the model runs it, visibly.
    if (continues) conversation.chat?.pythonAgent.addContext(continuationContext(continues.turns));
    return conversation;
  }

  /**
   * A conversation read back from disk. `paused` is its session's record: one with a snapshot (the
   * server that stopped paused it) is resumed at the next turn. One that says the session was lost
   * (its pause failed, the server was killed), or none (the session had ended), leaves the
   * conversation read-only, saying why; it can be continued in a new one.
   */
  static restore(
    history: StoredHistory,
    owner: Owner,
    settings: ConversationSettings,
    paused?: PausedRecord,
  ): ServerConversation {
    const { header } = history;
    const conversation = new ServerConversation(settings, undefined, {
      id: header.id,
      createdAt: header.createdAt,
      owner,
      sessionId: header.sessionId,
      ...(header.continuedFrom ? { continuedFrom: header.continuedFrom } : {}),
    });
    conversation.title = history.title;
    conversation.titled = history.titled;
    conversation.updatedAt = history.updatedAt;
    conversation.history.droppedTurns = history.droppedTurns;
    conversation.chosenMode = history.mode;
    if (paused?.snapshotId === undefined) {
      conversation.expiry = paused?.lost
        ? { at: Date.parse(paused.pausedAt) || Date.now(), reason: 'lost', detail: paused.lost }
        : { at: Date.now(), reason: 'restart' };
    }
    const linked = new Set(history.turns.flatMap((turn) => turnImageUrls(turn)).map(imageName));
    for (const [name, image] of history.images) {
      if (linked.has(name)) conversation.images.restore({ name, ...image });
    }
    conversation.turns.push(...history.turns);
    return conversation;
  }

  get turns(): Turn[] {
    return this.history.turns;
  }

  /** Turns dropped whole to keep the history within its bounds. */
  get droppedTurns(): number {
    return this.history.droppedTurns;
  }

  /** How the web UI shows it, as a client last set it (PATCH); undefined until one does. */
  get mode(): ConversationMode | undefined {
    return this.chosenMode;
  }

  set mode(mode: ConversationMode | undefined) {
    if (mode === this.chosenMode) return;
    this.chosenMode = mode;
    this.journal?.modeChanged();
  }

  /** The first record of its history file. */
  header(): HeaderRecord {
    return {
      type: 'conversation',
      version: HISTORY_FORMAT_VERSION,
      id: this.id,
      ownerId: this.owner.id,
      sessionId: this.sessionId,
      createdAt: this.createdAt,
      title: this.title,
      titled: this.titled,
      ...(this.chosenMode ? { mode: this.chosenMode } : {}),
      ...(this.continuedFrom ? { continuedFrom: this.continuedFrom } : {}),
    };
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** The session it runs on now, if it has one bound (closed when it was paused: its next turn resumes it). */
  get entry(): ManagedSession | undefined {
    return this.current;
  }

  /** Its session while it is live (not paused, not gone). */
  get liveSession(): Session | undefined {
    const entry = this.current;
    return entry && !this.expired && !entry.session.closed && !entry.pausing ? entry.session : undefined;
  }

  /**
   * Set once the session is gone: the history stays, the state does not. A session paused (idle, or
   * by a server that stopped) is not gone: the next turn resumes it.
   */
  get expired(): Expiry | undefined {
    const entry = this.current;
    if (!this.expiry && entry?.session.closed && !resumable(entry)) {
      const at = entry.closedAt ?? Date.now();
      if (entry.closedReason === 'pause-failed') {
        this.expire({ at, reason: 'lost' });
        // The record says why; the next read of the conversation says it too.
        void this.settings.registry.pauses
          .find(this.owner, this.sessionId)
          .then((record) => {
            if (record?.lost && this.expiry?.reason === 'lost') this.expiry.detail ??= record.lost;
          })
          .catch(() => undefined);
      } else {
        this.expire({ at, reason: entry.closedReason ?? 'closed' });
      }
    }
    return this.expiry;
  }

  private expire(expiry: Expiry): void {
    this.expiry ??= expiry;
    this.cancel(); // a turn waiting for an approval would otherwise wait forever
  }

  /** Not live, but not gone either: its session is paused (or being paused), or expired. For the store's bounds. */
  get dormant(): boolean {
    return this.liveSession === undefined;
  }

  /**
   * Makes sure the conversation has a live session before a turn: a paused one
   * is resumed (in this process, or after a restart from the id its journal
   * keeps) and everything bound to the old session is bound to the new one.
   * A session that is gone expires the conversation, and the turn is then
   * refused (410). Any other failure (a limit, a sandbox that does not start)
   * answers the request, and the conversation stays resumable.
   */
  async ensureSession(): Promise<void> {
    if (this.running || this.expired) return; // the turn is refused as busy, or expired
    const entry = this.current;
    if (entry && !entry.session.closed && !entry.pausing) return;
    this.resuming ??= this.resume().finally(() => {
      this.resuming = undefined;
    });
    await this.resuming;
  }

  private async resume(): Promise<void> {
    let entry: ManagedSession;
    try {
      entry = await this.settings.registry.open(this.owner, this.sessionId);
    } catch (error) {
      const gone = goneBecause(error, this.current !== undefined);
      if (!gone) throw error;
      this.settings.logger.info(
        { conversation: this.id, session: this.sessionId, reason: gone.reason, detail: gone.detail },
        'the session of a conversation is gone',
      );
      this.expire(gone);
      return;
    }
    if (entry === this.current) return; // its pause was refused (code still running): it is live as it was
    await this.bind(entry);
    const notice = resumeNotice(entry.restored);
    this.settings.logger.info(
      { conversation: this.id, session: entry.id, notRestored: notice?.skipped.length ?? 0 },
      'the session of a conversation resumed',
    );
    if (notice) {
      this.pendingNotice = notice;
      this.chat?.pythonAgent.addContext(resumeNoteForModel(notice));
    }
  }

  /** Binds the conversation to `entry` (session-binding.ts): the chat, the file agent, the cell's file watcher. */
  private async bind(entry: ManagedSession): Promise<void> {
    const bound = await bindSession(entry, {
      ...this.settings,
      conversationId: this.id,
      previous: this.chat,
      turns: this.turns,
      approve: (request) => this.requestApproval(request),
      onEvent: (event) => this.events.agentEvent(event),
      onPublished: (files) => this.links.notePublished(files),
    });
    this.current = entry;
    this.chat = bound.chat;
    this.fileAgent = bound.fileAgent;
    this.cellFiles = bound.cellFiles;
  }

  /** Lets go of its session, the conversation being deleted: a live one closes, a paused one is deleted. */
  async closeSession(): Promise<void> {
    if (this.expired) return;
    const { registry, logger } = this.settings;
    const entry = this.current;
    if (entry?.pausing) await entry.pausing.catch(() => undefined);
    if (entry && !entry.session.closed) {
      await registry.remove(entry, 'deleted');
      return;
    }
    // Paused, or resumed meanwhile by another request (/v1/sessions/{id}/files).
    const live = registry.find(this.owner, this.sessionId);
    if (live) {
      await registry.remove(live, 'deleted');
      return;
    }
    await registry.pauses.remove(this.owner, this.sessionId).catch((error: unknown) => {
      logger.warn({ err: error, conversation: this.id, session: this.sessionId }, 'cannot delete a paused session');
    });
  }

  summary(): ConversationSummary {
    const expired = this.expired;
    return {
      id: this.id,
      title: this.title,
      sessionId: this.sessionId,
      status: expired ? 'expired' : 'active',
      busy: this.busy,
      createdAt: new Date(this.createdAt).toISOString(),
      updatedAt: new Date(this.updatedAt).toISOString(),
      ...(expired ? { expiredAt: new Date(expired.at).toISOString(), expiredReason: describeExpiry(expired) } : {}),
      turnCount: this.turns.length,
      ...(this.mode ? { mode: this.mode } : {}),
      ...(this.droppedTurns > 0 ? { droppedTurns: this.droppedTurns } : {}),
      ...(this.continuedFrom ? { continuedFrom: this.continuedFrom } : {}),
    };
  }

  view(): ConversationView {
    return { ...this.summary(), turns: this.turns };
  }

  /** Asks the model; the events go to `listener` as they happen. Resolves with the finished turn. */
  ask(content: string, approval: ApprovalMode, listener?: TurnListener): { turn: Turn; done: Promise<Turn> } {
    const expired = this.expired; // a conversation whose session is gone says so, model or not
    if (expired) throw new ConversationExpiredError(describeExpiry(expired));
    if (!this.settings.model) throw new ModelNotConfiguredError();
    this.refuseWhenUnavailable();
    const chat = this.chat!;
    const started = this.start('message', content, listener, approval, async (running) => {
      const answer = await chat.ask(content, { signal: running.abort.signal });
      // A non-streaming model (or a stop without words) left no text for the answer yet.
      const turn = this.turns[running.index]!;
      const last = turn.steps[turn.steps.length - 1];
      if (!(last?.type === 'text' && last.text.trim() !== '')) this.emit({ type: 'answer-delta', text: answer.text });
      this.emit({ type: 'answer-end', stopReason: answer.stopReason, steps: answer.steps, usage: answer.usage });
    });
    if (!this.titled) this.retitle(content);
    return started;
  }

  /** Runs a notebook cell in the session, in its language's default context (python unless told). */
  runCell(
    code: string,
    options: { language?: Language | undefined; timeoutMs?: number | undefined },
    listener?: TurnListener,
  ): { turn: Turn; done: Promise<Turn> } {
    const { timeoutMs } = options;
    const language = options.language ?? 'python';
    const entry = this.refuseWhenUnavailable();
    this.settings.registry.admit(entry, code); // a refusal answers the request, before the stream starts
    const started = this.start('cell', code, listener, 'auto', async (running) => {
      const callId = this.turns[running.index]!.id;
      const cellFiles = this.cellFiles!;
      await cellFiles.snapshot();
      await cellFiles.changed(); // what earlier turns wrote is not this cell's doing
      this.emit({
        type: 'execution-start',
        callId,
        code,
        attempt: 1,
        maxAttempts: 1,
        edited: false,
        ...(language === 'python' ? {} : { language }),
      });
      const execution = await this.settings.registry.execute(entry, code, {
        admitted: true,
        language,
        timeoutMs,
        signal: running.abort.signal,
        onStdout: (text) => this.emit({ type: 'stdout-delta', callId, text }),
        onStderr: (text) => this.emit({ type: 'stderr-delta', callId, text }),
        onResult: (result) => this.events.result(running, callId, result),
      });
      if (execution.files) this.links.notePublished(execution.files);
      const files = (await cellFiles.changed()).map((file) =>
        this.links.codeFile({ path: file.path, size: file.size, kind: 'file' }),
      );
      this.events.executionEnd(callId, execution, files);
    });
    // Code is no title: a cell names only a nameless conversation, and only provisionally.
    if (!this.titled && this.title === UNTITLED) this.title = titleFromCell(code) ?? UNTITLED;
    return started;
  }

  /**
   * Checks an upload before its body is read: the conversation can take a turn,
   * and the key's rate limit (executions and uploads share it) has a token.
   */
  admitUpload(): void {
    this.settings.registry.admitUpload(this.refuseWhenUnavailable());
  }

  /**
   * Writes uploaded files into /mnt/data and records their previews (and tells
   * the model about them). A failed upload stays in the history as a failed
   * turn; `failure` is what failed, for the caller to answer with.
   */
  async upload(files: { name: string; bytes: Buffer }[]): Promise<{ turn: Turn; failure?: unknown }> {
    let failure: unknown;
    const turn = await this.start('upload', '', undefined, 'auto', async (running) => {
      try {
        await this.writeUploads(running, files);
      } catch (error) {
        failure = error;
        throw error;
      }
    }).done;
    return failure === undefined || turn.status !== 'error' ? { turn } : { turn, failure };
  }

  private async writeUploads(running: RunningTurn, files: { name: string; bytes: Buffer }[]): Promise<void> {
    const previews: FilePreview[] = [];
    for (const file of files) {
      const loaded = this.chat
        ? await this.chat.addFile(file.name, file.bytes)
        : await this.fileAgent!.share(file.name, file.bytes);
      previews.push({
        path: file.name,
        size: loaded.size,
        format: loaded.format,
        ...(loaded.rows !== undefined ? { rows: loaded.rows } : {}),
        ...(loaded.columns ? { columns: loaded.columns } : {}),
        ...(loaded.head ? { head: loaded.head } : {}),
        text: loaded.preview,
        url: this.links.fileUrl(file.name),
      });
    }
    this.turns[running.index] = { ...this.turns[running.index]!, files: previews };
    // A provisional title: the first question or cell names the conversation.
    if (!this.titled) this.title = titleFromFiles(files.map((file) => file.name));
  }

  /** Answers a pending approval. */
  approve(approvalId: string, answer: ApprovalAnswer): void {
    if (!this.running) throw new ApprovalNotFoundError(approvalId);
    this.running.answer(approvalId, answer);
  }

  /** Stops the running turn: interrupts code, declines pending approvals, stops asking the model. */
  cancel(): boolean {
    if (!this.running) return false;
    this.running.cancel();
    return true;
  }

  // --- turns -------------------------------------------------------------------

  /** The session a new turn runs on: refused when it is gone, when a turn runs, or when it is paused. */
  private refuseWhenUnavailable(): ManagedSession {
    const expired = this.expired;
    if (expired) throw new ConversationExpiredError(describeExpiry(expired));
    if (this.running) throw new ConversationBusyError();
    return this.live();
  }

  /** The session, while the conversation has one live (`ensureSession` resumes a paused one first). */
  private live(): ManagedSession {
    const expired = this.expired;
    if (expired) throw new ConversationExpiredError(describeExpiry(expired));
    const entry = this.current;
    if (!entry || entry.session.closed || entry.pausing) {
      // Paused between `ensureSession` and the turn (an upload's body took longer than the idle timeout).
      throw new ConversationPausedError();
    }
    return entry;
  }

  private start(
    kind: Turn['kind'],
    input: string,
    listener: TurnListener | undefined,
    approval: ApprovalMode,
    work: (running: RunningTurn) => Promise<void>,
  ): { turn: Turn; done: Promise<Turn> } {
    this.refuseWhenUnavailable();
    const turn: Turn = {
      id: randomUUID(),
      kind,
      createdAt: new Date().toISOString(),
      status: 'running',
      input,
      steps: [],
    };
    const running = new RunningTurn(
      this.turns.length,
      approval,
      this.limits.outputBytes,
      this.settings.logger,
      listener,
    );
    this.turns.push(turn);
    this.running = running;
    this.touch();
    this.journal?.turnChanged(turn);
    running.send({ type: 'turn-start', turn });
    // What the resume before this turn did not bring back.
    const notice = this.pendingNotice;
    this.pendingNotice = undefined;
    if (notice) this.emit({ type: 'session-resumed', resumed: notice });
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
          this.emit({ type: 'error', error: describeTurnError(error, this.settings.logger) });
        }
      }
      this.finishOpenSteps(running);
      this.turns[running.index] = { ...this.turns[running.index]!, status };
      this.running = undefined;
      this.touch();
      this.keepWithinLimits(); // may drop older turns (never this one, the newest) or outputs
      const final = this.turns[this.turns.length - 1]!;
      this.journal?.turnChanged(final);
      running.send({ type: 'turn-end', turn: final });
      return final;
    })();
    return { turn, done };
  }

  /** Folds an event, as kept within the output budget, into the running turn and hands it to the listeners. */
  private emit(event: ConversationEvent): void {
    const running = this.running;
    if (!running) return;
    const kept = running.withinBudget(event);
    if (!kept) return;
    this.turns[running.index] = applyConversationEvent(this.turns[running.index]!, kept);
    this.touch();
    this.journal?.turnChanged(this.turns[running.index]!);
    running.send(kept);
  }

  /** Code that never ran because the turn stopped is marked skipped. */
  private finishOpenSteps(running: RunningTurn): void {
    for (const step of this.turns[running.index]!.steps) {
      if (step.type === 'code' && (step.status === 'awaiting-approval' || step.status === 'ready')) {
        this.emit({ type: 'execution-skipped', callId: step.callId, code: step.code, reason: 'cancelled' });
      }
    }
  }

  private requestApproval(request: ApprovalRequest): Promise<ApprovalDecision> {
    if (!this.running) return Promise.resolve({ action: 'run' });
    return this.running.requestApproval(request, (approvalId) =>
      this.emit({ type: 'approval-request', approvalId, ...request }),
    );
  }

  // --- bounds --------------------------------------------------------------------

  /** The bytes this conversation holds: its turns as JSON, and its images. */
  get historyBytes(): number {
    return this.history.bytes;
  }

  /** Within the conversation's bound, then (through the store) the key's. */
  private keepWithinLimits(): void {
    if (this.historyBytes > this.limits.historyBytes) {
      this.dropOutputs(this.limits.historyBytes);
      this.dropTurns(this.limits.historyBytes);
    }
    this.settings.onHistoryGrew?.(this);
  }

  /**
   * Replaces the outputs of settled code steps with a note, oldest first, until
   * the history takes at most `targetBytes` (or no output is left to drop).
   */
  dropOutputs(targetBytes: number): void {
    this.history.dropOutputs(targetBytes);
  }

  /**
   * Drops whole turns, oldest first, until the history takes at most
   * `targetBytes`; never the newest turn (the running one, or the one just done).
   */
  dropTurns(targetBytes: number): void {
    const running = this.running;
    this.history.dropTurns(targetBytes, () => {
      if (running) running.index--;
    });
  }

  /** Links name the session by its id, which stays the same across a pause and a resume. */
  private urlEntry(): ManagedSession {
    return this.current ?? this.live();
  }

  private retitle(text: string): void {
    this.title = titleFrom(text);
    this.titled = true;
  }

  private touch(): void {
    this.updatedAt = Date.now();
  }
}

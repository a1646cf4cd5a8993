/**
 * One conversation of the server: a session (from the registry), the data
 * chat that asks the server's model about it, and the transcript of every
 * turn. A turn is a question, a notebook cell or an upload (turn-work.ts
 * says what each does); here is which may start, and what names the
 * conversation. One runs at a time (turn-loop.ts), its events folded into the
 * transcript and handed to whoever listens (an SSE response). A client that
 * goes away does not stop the turn; `cancel()` does.
 *
 * The agent's code and shell commands go through the registry (`execute`,
 * `commands.run`), so rate limits, timeouts, metrics and graceful shutdown
 * apply as to any execution. In `ask` mode an approval is an
 * `approval-request` event answered by `POST …/approvals/{id}`. Uploads take a
 * token from the key's rate before their body is read, and are written into
 * /mnt/data by the FileAccessAgent (bytes from the user, no host path).
 *
 * Its session may be paused and resumed under the same id: the next turn
 * resumes it first (`ensureSession`); only a session that is gone expires the
 * conversation, which can then be continued in a new one
 * (conversation-session.ts). What the history keeps within its bounds is
 * conversation-history.ts; how outputs are linked, conversation-links.ts; what
 * the agents' events become in the history, turn-events.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChatModel } from '../../agents/model.js';
import type {
  ApprovalMode,
  ConversationMode,
  ConversationSummary,
  Conversation as ConversationView,
  ConversationVolume,
  Turn,
} from '../../protocol/index.js';
import type { Language } from '../../session/languages.js';
import type { Session } from '../../session/session.js';
import type { Owner } from '../core/auth.js';
import { ConversationBusyError, ConversationExpiredError, ModelNotConfiguredError } from '../core/errors.js';
import { ImageStore } from '../core/image-store.js';
import type { ManagedSession, PausedRecord } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { continuationContext } from './continuation.js';
import { ConversationHistory } from './conversation-history.js';
import type { ConversationJournal } from './conversation-journal.js';
import { ConversationLinks } from './conversation-links.js';
import { ConversationSession, restoredExpiry } from './conversation-session.js';
import { DEFAULT_HISTORY_LIMITS, type HistoryLimits } from './history-limits.js';
import { type HeaderRecord, HISTORY_FORMAT_VERSION } from './history-records.js';
import type { ApprovalAnswer, RunningTurn, TurnListener } from './running-turn.js';
import { describeExpiry, type Expiry } from './session-binding.js';
import type { StoredHistory } from './state-directory.js';
import { titleFrom, titleFromCell, titleFromFiles, UNTITLED } from './title.js';
import { TurnEvents } from './turn-events.js';
import { TurnLoop } from './turn-loop.js';
import { TurnWork, type UploadedFile } from './turn-work.js';

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
  /** The volumes its session mounts, as they were when it started (its pauses and resumes keep them). */
  readonly volumes: ConversationVolume[];
  readonly images: ImageStore;
  /** Writes the history to disk as it changes, when the server keeps a state directory. */
  journal?: ConversationJournal;
  private readonly limits: HistoryLimits;
  private readonly history: ConversationHistory;
  /** Its turns, one at a time. */
  private readonly loop: TurnLoop;
  /** The session it runs on, and what is bound to it, across pauses and resumes. */
  private readonly session: ConversationSession;
  /** How its outputs are linked: images, files, and the newest published link of each file. */
  private readonly links: ConversationLinks;
  /** What its turns' agents and executions become in its history. */
  private readonly events: TurnEvents;
  /** What each kind of turn does once it runs. */
  private readonly work: TurnWork;

  private constructor(
    private readonly settings: ConversationSettings,
    title: string | undefined,
    identity: {
      id: string;
      createdAt: number;
      owner: Owner;
      sessionId: string;
      continuedFrom?: ContinuedFrom;
      expiry?: Expiry | undefined;
      volumes?: ConversationVolume[];
    },
  ) {
    this.id = identity.id;
    this.createdAt = identity.createdAt;
    this.updatedAt = identity.createdAt;
    this.owner = identity.owner;
    if (identity.continuedFrom) this.continuedFrom = identity.continuedFrom;
    this.volumes = identity.volumes ?? [];
    this.limits = settings.limits ?? DEFAULT_HISTORY_LIMITS;
    this.images = new ImageStore({ maxImages: MAX_CONVERSATION_IMAGES, maxBytes: this.limits.historyBytes });
    this.history = new ConversationHistory(this.images, this.limits.historyBytes, () => this.journal?.rewrite());
    this.links = new ConversationLinks(this.id, this.images, () => this.urlEntry());
    this.loop = new TurnLoop({
      turns: this.history.turns,
      outputBytes: this.limits.outputBytes,
      logger: settings.logger,
      touch: () => this.touch(),
      turnChanged: (turn) => this.journal?.turnChanged(turn),
      keepWithinLimits: () => this.keepWithinLimits(),
    });
    this.events = new TurnEvents({
      running: () => this.loop.running,
      turn: () => this.loop.turn(),
      emit: (event) => this.loop.emit(event),
      links: this.links,
      outputBytes: this.limits.outputBytes,
      keepWithinLimits: () => this.keepWithinLimits(),
    });
    this.session = new ConversationSession({
      ...settings,
      conversationId: this.id,
      owner: this.owner,
      sessionId: identity.sessionId,
      expiry: identity.expiry,
      turns: () => this.turns,
      approve: (request) => this.loop.requestApproval(request),
      onEvent: (event) => this.events.agentEvent(event),
      onPublished: (files) => this.links.notePublished(files),
      onExpired: () => this.cancel(),
    });
    const { loop, session, links, events } = this;
    this.work = new TurnWork({ ...settings, turns: this.history.turns, loop, session, links, events });
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
      volumes: entry.session.mounts.map(({ volumeId, volume, path, readOnly, subPath }) => ({
        volumeId,
        volume,
        path,
        readOnly,
        ...(subPath !== undefined ? { subPath } : {}),
      })),
    });
    await conversation.session.bind(entry);
    // The model reads the earlier history; nothing of it runs again unless the model runs it, visibly.
    if (continues) conversation.session.chat?.pythonAgent.addContext(continuationContext(continues.turns));
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
      ...(header.volumes ? { volumes: header.volumes } : {}),
      expiry: restoredExpiry(paused),
    });
    conversation.title = history.title;
    conversation.titled = history.titled;
    conversation.updatedAt = history.updatedAt;
    conversation.chosenMode = history.mode;
    conversation.history.restore(history);
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
      sessionId: this.session.id,
      createdAt: this.createdAt,
      title: this.title,
      titled: this.titled,
      ...(this.chosenMode ? { mode: this.chosenMode } : {}),
      ...(this.continuedFrom ? { continuedFrom: this.continuedFrom } : {}),
      ...(this.volumes.length > 0 ? { volumes: this.volumes } : {}),
    };
  }

  get busy(): boolean {
    return this.loop.running !== undefined;
  }

  /** The session it runs on now, if it has one bound (closed when it was paused: its next turn resumes it). */
  get entry(): ManagedSession | undefined {
    return this.session.entry;
  }

  /** Its session while it is live (not paused, not gone). */
  get liveSession(): Session | undefined {
    return this.session.live;
  }

  /** Set once the session is gone: the history stays, the state does not (a paused one is not gone). */
  get expired(): Expiry | undefined {
    return this.session.expired;
  }

  /** Not live, but not gone either: its session is paused (or being paused), or expired. For the store's bounds. */
  get dormant(): boolean {
    return this.liveSession === undefined;
  }

  /**
   * Makes sure the conversation has a live session before a turn, resuming a paused one. A session
   * that is gone expires the conversation, and the turn is then refused (410). Any other failure (a
   * limit, a sandbox that does not start) answers the request, and the conversation stays resumable.
   */
  async ensureSession(): Promise<void> {
    if (this.busy) return; // the turn is refused as busy
    await this.session.ensure();
  }

  /** Lets go of its session, the conversation being deleted: a live one closes, a paused one is deleted. */
  async closeSession(): Promise<void> {
    await this.session.close();
  }

  summary(): ConversationSummary {
    const expired = this.expired;
    return {
      id: this.id,
      title: this.title,
      sessionId: this.session.id,
      status: expired ? 'expired' : 'active',
      busy: this.busy,
      createdAt: new Date(this.createdAt).toISOString(),
      updatedAt: new Date(this.updatedAt).toISOString(),
      ...(expired ? { expiredAt: new Date(expired.at).toISOString(), expiredReason: describeExpiry(expired) } : {}),
      turnCount: this.turns.length,
      ...(this.mode ? { mode: this.mode } : {}),
      ...(this.droppedTurns > 0 ? { droppedTurns: this.droppedTurns } : {}),
      ...(this.continuedFrom ? { continuedFrom: this.continuedFrom } : {}),
      ...(this.volumes.length > 0 ? { volumes: this.volumes } : {}),
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
    const chat = this.session.chat!;
    const started = this.start('message', content, listener, approval, (running) =>
      this.work.ask(running, chat, content),
    );
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
    const started = this.start('cell', code, listener, 'auto', (running) =>
      this.work.cell(running, entry, code, { language, timeoutMs }),
    );
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
  async upload(files: UploadedFile[]): Promise<{ turn: Turn; failure?: unknown }> {
    let failure: unknown;
    const turn = await this.start('upload', '', undefined, 'auto', async (running) => {
      try {
        await this.work.upload(running, files);
        // A provisional title: the first question or cell names the conversation.
        if (!this.titled) this.title = titleFromFiles(files.map((file) => file.name));
      } catch (error) {
        failure = error;
        throw error;
      }
    }).done;
    return failure === undefined || turn.status !== 'error' ? { turn } : { turn, failure };
  }

  /** Answers a pending approval. */
  approve(approvalId: string, answer: ApprovalAnswer): void {
    this.loop.approve(approvalId, answer);
  }

  /** Stops the running turn: interrupts code, declines pending approvals, stops asking the model. */
  cancel(): boolean {
    return this.loop.cancel();
  }

  /** The session a new turn runs on: refused when it is gone, when a turn runs, or when it is paused. */
  private refuseWhenUnavailable(): ManagedSession {
    const expired = this.expired;
    if (expired) throw new ConversationExpiredError(describeExpiry(expired));
    if (this.busy) throw new ConversationBusyError();
    return this.session.available();
  }

  private start(
    kind: Turn['kind'],
    input: string,
    listener: TurnListener | undefined,
    approval: ApprovalMode,
    work: (running: RunningTurn) => Promise<void>,
  ): { turn: Turn; done: Promise<Turn> } {
    this.refuseWhenUnavailable();
    return this.loop.start({ kind, input, listener, approval, resumed: this.session.takeNotice() }, work);
  }

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
    const running = this.loop.running;
    this.history.dropTurns(targetBytes, () => {
      if (running) running.index--;
    });
  }

  /** Links name the session by its id, which stays the same across a pause and a resume. */
  private urlEntry(): ManagedSession {
    return this.session.entry ?? this.session.available();
  }

  private retitle(text: string): void {
    this.title = titleFrom(text);
    this.titled = true;
  }

  private touch(): void {
    this.updatedAt = Date.now();
  }
}

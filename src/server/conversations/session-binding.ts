/**
 * A conversation's hold on its session. Bound to a session (a new one, or one
 * resumed from a pause under the same id), a conversation has a chat on it
 * (with a model), a file agent for uploads and a watcher of the files its
 * cells write; a resume binds new ones, and the model goes on with what it was
 * told and said so far. And when the hold is lost for good: which failures
 * of a resume mean the session is gone, and how that is said.
 */
import { DataChat } from '../../agents/data-chat.js';
import type { AgentEventListener } from '../../agents/events.js';
import { FileAccessAgent } from '../../agents/file-access-agent.js';
import type { ChatModel } from '../../agents/model.js';
import type { ApprovalDecision, ApprovalRequest } from '../../agents/python-exec-agent.js';
import type { Turn } from '../../protocol/index.js';
import { FileChanges } from '../../session/file-changes.js';
import { SessionLostError, SnapshotInvalidError, SnapshotNotFoundError } from '../../snapshots/snapshot-errors.js';
import { SessionNotFoundError } from '../core/errors.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { PublishedFile } from '../core/output-publisher.js';
import type { SessionRegistry } from '../core/registry.js';
import { resumedContext } from './continuation.js';

/** Why a conversation's session is gone: a reason describeExpiry words, and what the server knows of it. */
export interface Expiry {
  at: number;
  reason: string;
  detail?: string;
}

export interface BoundSession {
  chat?: DataChat;
  fileAgent: FileAccessAgent;
  cellFiles: FileChanges;
}

export interface BindOptions {
  registry: SessionRegistry;
  logger: { debug(object: object, message: string): void };
  model?: ChatModel;
  conversationId: string;
  /** The chat on the session before (a resume): the new one goes on with its instructions and messages. */
  previous?: DataChat | undefined;
  /** The conversation's history: told to a model that has no previous chat (read back after a restart). */
  turns: readonly Turn[];
  approve: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  onEvent: AgentEventListener;
  /** The files an execution of the chat's published, before the chat tells of them. */
  onPublished?: (files: PublishedFile[]) => void;
}

/** What a conversation binds to `entry`; the chat's code and commands go through the registry, on this entry. */
export async function bindSession(entry: ManagedSession, options: BindOptions): Promise<BoundSession> {
  const { registry, logger, model, previous, turns } = options;
  const chat = model
    ? await DataChat.create({
        model,
        session: entry.session,
        ownSession: false,
        run: async (code, runOptions) => {
          const execution = await registry.execute(entry, code, runOptions);
          if (execution.files) options.onPublished?.(execution.files);
          return execution;
        },
        runCommand: (command, commandOptions) => registry.commands.run(entry, command, commandOptions),
        approve: options.approve,
        onEvent: options.onEvent,
      })
    : undefined;
  if (chat && previous) {
    // Its instructions hold every context added so far (data previews, a continued history, notes).
    chat.pythonAgent.instructions = previous.pythonAgent.instructions;
    chat.pythonAgent.messages.add(...previous.pythonAgent.messages.messages);
  } else if (chat && turns.length > 0) {
    // Read back after a restart: what the model was told went with the process; the history is told as text.
    chat.pythonAgent.addContext(resumedContext(turns));
  }
  // A new chat is told where the volumes are (a resumed one was told already, in its instructions).
  if (chat && !previous && entry.session.mounts.length > 0) chat.pythonAgent.addContext(volumesContext(entry));
  const fileAgent = chat?.fileAgent ?? new FileAccessAgent({ dataRoots: [], files: entry.session.files });
  const conversation = options.conversationId;
  fileAgent.on((event) => {
    if (event.type === 'file-written') {
      logger.debug({ conversation, path: event.sessionPath, bytes: event.size }, 'previewing an upload');
    } else if (event.type === 'file-loaded') {
      const { sessionPath: path, size: bytes, format, rows } = event.file;
      logger.debug({ conversation, path, bytes, format, rows }, 'upload previewed');
    }
  });
  return { ...(chat ? { chat } : {}), fileAgent, cellFiles: new FileChanges(entry.session.files) };
}

/** What the model is told of the volumes the session mounts: their files outlive it. */
function volumesContext(entry: ManagedSession): string {
  const lines = entry.session.mounts.map(
    (mount) =>
      `- ${mount.path}: the volume "${mount.volume}"${mount.subPath ? ` (its directory ${mount.subPath})` : ''}, ${mount.readOnly ? 'read-only' : 'read-write'}`,
  );
  return `Volumes are mounted in the sandbox: files there outlive this session and are shared with the user's other sessions.\n${lines.join('\n')}`;
}

/** A session paused, or being paused: its next request resumes it. */
export function resumable(entry: ManagedSession): boolean {
  return entry.pausing !== undefined || entry.closedReason === 'paused';
}

/**
 * Why a resume failed for good, or undefined when it may work another time (a limit, a sandbox that
 * did not start). `hadSession`: the conversation ran on it in this process (else it was read back).
 */
export function goneBecause(error: unknown, hadSession: boolean): Expiry | undefined {
  const at = Date.now();
  if (error instanceof SessionNotFoundError) return { at, reason: hadSession ? 'gone' : 'restart' };
  if (error instanceof SnapshotNotFoundError) return { at, reason: 'lost', detail: 'its snapshot is missing' };
  if (error instanceof SnapshotInvalidError) {
    return { at, reason: 'lost', detail: `its snapshot was refused: ${error.reason}` };
  }
  if (error instanceof SessionLostError) return { at, reason: 'lost', detail: error.reason };
  return undefined;
}

/** How the session ended, after "This conversation's session …". */
export function describeExpiry({ reason, detail }: Expiry): string {
  switch (reason) {
    case 'lost':
      return `was lost, its state could not be kept${detail ? `: ${detail}` : ''}`;
    case 'gone':
      return 'was deleted while it was paused';
    case 'idle':
      return 'was closed after sitting idle';
    case 'deleted':
      return 'was deleted';
    case 'shutdown':
      return 'ended when the server shut down';
    case 'restart':
      return 'ended when the server restarted';
    default:
      return 'ended';
  }
}

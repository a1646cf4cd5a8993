/**
 * A session as the server holds it: the library's session with its owner, the
 * front door that made it, and the server's bookkeeping. A leaf, so the
 * registry and what it hands sessions to can all name it.
 */

import type { CommandHandle } from '../../session/command.js';
import type { FileChanges } from '../../session/file-changes.js';
import type { Session } from '../../session/session.js';
import type { RestoreReport } from '../../session/session-state.js';
import type { MountedVolume } from '../../volumes/session-mounts.js';
import type { Owner } from './auth.js';
import { ImageStore } from './image-store.js';

export type SessionSource = 'v1' | 'azure' | 'mcp' | 'conversation' | 'e2b' | 'jupyter' | 'jupyter-terminal';

export interface ManagedSession {
  /** The session's id, chosen by the server. */
  readonly id: string;
  readonly owner: Owner;
  readonly source: SessionSource;
  /** The client's name for it: an Azure identifier or an MCP session name. */
  readonly name?: string;
  /** Names are unique within a scope: `azure`, or one MCP connection. */
  readonly scope?: string;
  readonly session: Session;
  readonly createdAt: number;
  readonly images: ImageStore;
  executions: number;
  /** Background commands started through the server, by pid, until they end: their stdin stays open. */
  readonly backgroundCommands: Map<number, CommandHandle>;
  /** Executions in `execute()` now: the running one and those queued behind it. */
  inFlight: number;
  /** Its pause under way: a request meanwhile waits for it, then resumes the session. */
  pausing?: Promise<PausedRecord>;
  /**
   * What the front door that made it keeps with it across a pause (E2B: its
   * tokens, metadata, template): written into the paused record, given back on resume.
   */
  keep?: Record<string, unknown>;
  /** What its resume brought back, when it was resumed from a pause. */
  restored?: RestoreReport;
  /** Whether the files its executions write are published (uploaded, with links). */
  publishOutputs?: boolean;
  /** What /mnt/data held at the end of its last execution, when it publishes: the next one's changes are new. */
  outputs?: FileChanges;
  /** When and why the server let go of the session (idle, deleted, shutdown, closed). */
  closedAt?: number;
  closedReason?: string;
}

/** A session's entry as the registry first holds it: its own fields, nothing run yet. */
export function newManagedSession(
  fields: Pick<ManagedSession, 'id' | 'owner' | 'source' | 'session'> &
    Partial<Pick<ManagedSession, 'name' | 'scope' | 'keep' | 'publishOutputs'>>,
): ManagedSession {
  return {
    ...fields,
    createdAt: Date.now(),
    images: new ImageStore(),
    executions: 0,
    backgroundCommands: new Map(),
    inFlight: 0,
  };
}

/** A paused session as the server records it (paused-sessions.ts): which session, and its snapshot. */
export interface PausedRecord {
  /** The session's id, the one its client uses. */
  id: string;
  source: SessionSource;
  /** The client's name for it (an Azure identifier, an MCP session name) and the name's scope. */
  name?: string;
  scope?: string;
  /** The environment it ran: it resumes in the same. */
  environment: string;
  /** Why it was paused: `idle`, `shutdown`, `requested`. */
  reason: string;
  pausedAt: string;
  /** Its snapshot; absent when the pause failed (`lost` says why). */
  snapshotId?: string;
  lost?: string;
  /**
   * The server (node name) the session is live on, in the marker a live session leaves: with a
   * store shared by several servers, another server's marker may be of a session live there.
   */
  node?: string;
  /** It publishes its executions' files (ManagedSession.publishOutputs). */
  publishOutputs?: boolean;
  /** The front door's own data (ManagedSession.keep). */
  keep?: Record<string, unknown>;
  /** The volumes it mounted (a resume mounts them again). */
  mounts?: MountedVolume[];
}
